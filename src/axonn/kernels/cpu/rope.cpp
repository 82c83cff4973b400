#include "axonn/kernels/cpu/rope.h"

#include <cmath>
#include <numbers>

namespace axonn::cpu {
namespace {

double llama3_rescaled(double inv_freq, RopeScaling const& s) {
    double const wavelength = 2 * std::numbers::pi / inv_freq;
    double const low_freq_wavelength = s.original_max_position / s.low_freq_factor;
    double const high_freq_wavelength = s.original_max_position / s.high_freq_factor;
    if (wavelength < high_freq_wavelength) return inv_freq;
    if (wavelength > low_freq_wavelength) return inv_freq / s.factor;
    double const smooth =
        (s.original_max_position / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    return (1 - smooth) * inv_freq / s.factor + smooth * inv_freq;
}

}  // namespace

std::vector<double> rope_inverse_frequencies(int head_size, double theta, std::optional<RopeScaling> const& scaling) {
    std::vector<double> inv_freq(static_cast<std::size_t>(head_size / 2));
    for (int i = 0; i < head_size / 2; ++i) {
        inv_freq[i] = 1.0 / std::pow(theta, 2.0 * i / head_size);
        if (scaling) inv_freq[i] = llama3_rescaled(inv_freq[i], *scaling);
    }
    return inv_freq;
}

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
