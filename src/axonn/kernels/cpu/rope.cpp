#include "axonn/kernels/cpu/rope.h"

#include <cmath>
#include <vector>

namespace axonn::cpu {

template <typename T>
void rope_rotate(T* x, double const* inv_freq, int B, int T_, int heads, int head_size, std::int64_t stride,
                 int first_position, int direction) {
    int const half = head_size / 2;
    // cos and sin of each (position, frequency), once for every sequence and head.
    std::vector<T> cosines(static_cast<std::size_t>(T_) * half), sines(cosines.size());
    for (int t = 0; t < T_; ++t) {
        for (int i = 0; i < half; ++i) {
            double const angle = static_cast<double>(first_position + t) * inv_freq[i];
            cosines[static_cast<std::size_t>(t) * half + i] = static_cast<T>(std::cos(angle));
            sines[static_cast<std::size_t>(t) * half + i] = static_cast<T>(direction * std::sin(angle));
        }
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T_; ++t) {
            T const* c = cosines.data() + static_cast<std::size_t>(t) * half;
            T const* s = sines.data() + static_cast<std::size_t>(t) * half;
            T* row = x + (static_cast<std::int64_t>(b) * T_ + t) * stride;
            for (int h = 0; h < heads; ++h) {
                T* first = row + static_cast<std::int64_t>(h) * head_size;
                T* second = first + half;
#pragma omp simd
                for (int i = 0; i < half; ++i) {
                    T const x1 = first[i], x2 = second[i];
                    first[i] = x1 * c[i] - x2 * s[i];
                    second[i] = x2 * c[i] + x1 * s[i];
                }
            }
        }
    }
}

template void rope_rotate<float>(float*, double const*, int, int, int, int, std::int64_t, int, int);
template void rope_rotate<double>(double*, double const*, int, int, int, int, std::int64_t, int, int);

}  // namespace axonn::cpu
