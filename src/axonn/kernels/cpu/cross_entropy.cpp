#include "axonn/kernels/cpu/cross_entropy.h"

#include "axonn/kernels/cpu/vector_math.h"

#include <cmath>
#include <limits>

namespace axonn::cpu {

template <typename T> void cross_entropy_max(T* row_max, T const* logits, std::int64_t N, int valid, int Vp_local) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* row = logits + n * Vp_local;
        // A slice of padding only must not win the max.
        row_max[n] = maximum_of(row, valid, -std::numeric_limits<T>::infinity());
    }
}

template <typename T>
void cross_entropy_sums(double* sums, T const* logits, T const* row_max, std::int32_t const* targets, std::int64_t N,
                        int valid, int Vp_local, int vocab_begin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* row = logits + n * Vp_local;
        T const maximum = row_max[n];
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < valid; ++j) sum += exp_approx(row[j] - maximum);
        std::int64_t const local_target = static_cast<std::int64_t>(targets[n]) - vocab_begin;
        bool const mine = targets[n] != ignore_index && local_target >= 0 && local_target < valid;
        sums[2 * n] = sum;
        sums[2 * n + 1] = mine ? row[local_target] : 0.0;
    }
}

template <typename T>
void cross_entropy_losses(T* losses, T* logsumexp, T const* row_max, double const* sums, std::int32_t const* targets,
                          std::int64_t N) {
    for (std::int64_t n = 0; n < N; ++n) {
        logsumexp[n] = static_cast<T>(row_max[n] + std::log(sums[2 * n]));
        losses[n] = targets[n] == ignore_index ? T(0) : static_cast<T>(logsumexp[n] - sums[2 * n + 1]);
    }
}

template <typename T>
void cross_entropy_backward(T* dlogits, T const* logits, T const* logsumexp, std::int32_t const* targets,
                            T const* dlosses, std::int64_t N, int valid, int Vp_local, int vocab_begin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* row = logits + n * Vp_local;
        T* drow = dlogits + n * Vp_local;
        bool const ignored = targets[n] == ignore_index;
        T const dloss = ignored ? T(0) : dlosses[n];
        T const lse = logsumexp[n];
#pragma omp simd
        for (int j = 0; j < valid; ++j) drow[j] = exp_approx(row[j] - lse) * dloss;
        for (int j = valid; j < Vp_local; ++j) drow[j] = 0;
        std::int64_t const local_target = static_cast<std::int64_t>(targets[n]) - vocab_begin;
        if (!ignored && local_target >= 0 && local_target < valid) drow[local_target] -= dloss;
    }
}

template void cross_entropy_max<float>(float*, float const*, std::int64_t, int, int);
template void cross_entropy_max<double>(double*, double const*, std::int64_t, int, int);
template void cross_entropy_sums<float>(double*, float const*, float const*, std::int32_t const*, std::int64_t, int,
                                        int, int);
template void cross_entropy_sums<double>(double*, double const*, double const*, std::int32_t const*, std::int64_t,
                                         int, int, int);
template void cross_entropy_losses<float>(float*, float*, float const*, double const*, std::int32_t const*,
                                          std::int64_t);
template void cross_entropy_losses<double>(double*, double*, double const*, double const*, std::int32_t const*,
                                           std::int64_t);
template void cross_entropy_backward<float>(float*, float const*, float const*, std::int32_t const*, float const*,
                                            std::int64_t, int, int, int);
template void cross_entropy_backward<double>(double*, double const*, double const*, std::int32_t const*,
                                             double const*, std::int64_t, int, int, int);

}  // namespace axonn::cpu
