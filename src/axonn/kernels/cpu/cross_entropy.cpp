#include "axonn/kernels/cpu/cross_entropy.h"

#include "axonn/kernels/cpu/vector_math.h"

#include <cmath>

namespace axonn::cpu {

template <typename T>
void cross_entropy_forward(T* losses, T* logsumexp, T const* logits, std::int32_t const* targets, std::int64_t N,
                           int V, int Vp) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* row = logits + n * Vp;
        T maximum = row[0];
#pragma omp simd reduction(max : maximum)
        for (int j = 0; j < V; ++j) maximum = row[j] > maximum ? row[j] : maximum;
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < V; ++j) sum += exp_approx(row[j] - maximum);
        logsumexp[n] = maximum + std::log(sum);
        losses[n] = targets[n] == ignore_index ? T(0) : logsumexp[n] - row[targets[n]];
    }
}

template <typename T>
void cross_entropy_backward(T* dlogits, T const* logits, T const* logsumexp, std::int32_t const* targets,
                            T const* dlosses, std::int64_t N, int V, int Vp) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* row = logits + n * Vp;
        T* drow = dlogits + n * Vp;
        bool const ignored = targets[n] == ignore_index;
        T const dloss = ignored ? T(0) : dlosses[n];
        T const lse = logsumexp[n];
#pragma omp simd
        for (int j = 0; j < V; ++j) drow[j] = exp_approx(row[j] - lse) * dloss;
        for (int j = V; j < Vp; ++j) drow[j] = 0;
        if (!ignored) drow[targets[n]] -= dloss;
    }
}

template void cross_entropy_forward<float>(float*, float*, float const*, std::int32_t const*, std::int64_t, int, int);
template void cross_entropy_forward<double>(double*, double*, double const*, std::int32_t const*, std::int64_t, int,
                                            int);
template void cross_entropy_backward<float>(float*, float const*, float const*, std::int32_t const*, float const*,
                                            std::int64_t, int, int);
template void cross_entropy_backward<double>(double*, double const*, double const*, std::int32_t const*, double const*,
                                             std::int64_t, int, int);

}  // namespace axonn::cpu
