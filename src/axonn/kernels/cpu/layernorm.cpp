#include "axonn/kernels/cpu/layernorm.h"

#include "axonn/kernels/cpu/bf16.h"

#include <algorithm>
#include <cmath>

namespace axonn::cpu {

template <typename T> void layernorm_statistics(double* stats, T const* inp, std::int64_t N, int C) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) layernorm_row_statistics(stats + 2 * n, inp + n * C, C);
}

template <typename T, typename Out>
void layernorm_forward(Out* out, T* mean, T* rstd, T const* inp, T const* weight, T const* bias, double const* stats,
                       std::int64_t N, int C, int C_total) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        double const m = stats[2 * n] / C_total;
        double const variance = std::max(0.0, stats[2 * n + 1] / C_total - m * m);
        T const s = static_cast<T>(1.0 / std::sqrt(variance + layernorm_eps));
        T const mt = static_cast<T>(m);
        T const* x = inp + n * C;
        Out* y = out + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) y[c] = stored_as<Out>((x[c] - mt) * s * weight[c] + bias[c]);
        mean[n] = mt;
        rstd[n] = s;
    }
}

template <typename T>
void layernorm_backward_statistics(double* stats, T const* dout, T const* inp, T const* weight, T const* mean,
                                   T const* rstd, std::int64_t N, int C) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* dy = dout + n * C;
        T const* x = inp + n * C;
        double dnorm_sum = 0, dnorm_norm_sum = 0;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_norm_sum)
        for (int c = 0; c < C; ++c) {
            T const norm = (x[c] - mean[n]) * rstd[n];
            T const dnorm = dy[c] * weight[c];
            dnorm_sum += dnorm;
            dnorm_norm_sum += static_cast<double>(dnorm) * norm;
        }
        stats[2 * n] = dnorm_sum;
        stats[2 * n + 1] = dnorm_norm_sum;
    }
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, T const* dout, T const* inp, T const* weight, T const* mean,
                        T const* rstd, double const* stats, std::int64_t N, int C, int C_total) {
    // The parameter gradients sum over all rows; rows run serially so no two rows write dweight at once.
    for (std::int64_t n = 0; n < N; ++n) {
        T const* dy = dout + n * C;
        T const* x = inp + n * C;
        T const m = mean[n];
        T const s = rstd[n];
        T const dnorm_mean = static_cast<T>(stats[2 * n] / C_total);
        T const dnorm_norm_mean = static_cast<T>(stats[2 * n + 1] / C_total);
        T* dx = dinp + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
            T const norm = (x[c] - m) * s;
            T const dnorm = dy[c] * weight[c];
            dbias[c] += dy[c];
            dweight[c] += norm * dy[c];
            dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
}

template void layernorm_statistics<float>(double*, float const*, std::int64_t, int);
template void layernorm_statistics<double>(double*, double const*, std::int64_t, int);
template void layernorm_forward<float, float>(float*, float*, float*, float const*, float const*, float const*,
                                              double const*, std::int64_t, int, int);
template void layernorm_forward<float, bfloat16>(bfloat16*, float*, float*, float const*, float const*, float const*,
                                                 double const*, std::int64_t, int, int);
template void layernorm_forward<double, double>(double*, double*, double*, double const*, double const*,
                                                double const*, double const*, std::int64_t, int, int);
template void layernorm_backward_statistics<float>(double*, float const*, float const*, float const*, float const*,
                                                   float const*, std::int64_t, int);
template void layernorm_backward_statistics<double>(double*, double const*, double const*, double const*,
                                                    double const*, double const*, std::int64_t, int);
template void layernorm_backward<float>(float*, float*, float*, float const*, float const*, float const*, float const*,
                                        float const*, double const*, std::int64_t, int, int);
template void layernorm_backward<double>(double*, double*, double*, double const*, double const*, double const*,
                                         double const*, double const*, double const*, std::int64_t, int, int);

}  // namespace axonn::cpu
