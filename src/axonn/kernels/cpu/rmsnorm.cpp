#include "axonn/kernels/cpu/rmsnorm.h"

#include "axonn/kernels/cpu/bf16.h"

#include <cmath>

namespace axonn::cpu {

template <typename T> void rmsnorm_statistics(double* stats, T const* inp, std::int64_t N, int C) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) stats[n] = rmsnorm_row_statistics(inp + n * C, C);
}

template <typename T, typename Out>
void rmsnorm_forward(Out* out, T* rstd, T const* inp, T const* weight, double const* stats, std::int64_t N, int C,
                     int C_total, double eps) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const s = static_cast<T>(1.0 / std::sqrt(stats[n] / C_total + eps));
        T const* x = inp + n * C;
        Out* y = out + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) y[c] = stored_as<Out>(x[c] * s * weight[c]);
        rstd[n] = s;
    }
}

template <typename T>
void rmsnorm_backward_statistics(double* stats, T const* dout, T const* inp, T const* weight, T const* rstd,
                                 std::int64_t N, int C) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* dy = dout + n * C;
        T const* x = inp + n * C;
        double dnorm_norm = 0;
#pragma omp simd reduction(+ : dnorm_norm)
        for (int c = 0; c < C; ++c) dnorm_norm += static_cast<double>(dy[c] * weight[c]) * (x[c] * rstd[n]);
        stats[n] = dnorm_norm;
    }
}

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, T const* dout, T const* inp, T const* weight, T const* rstd,
                      double const* stats, std::int64_t N, int C, int C_total) {
    // The weight's gradient sums over all rows; rows run serially so no two rows write dweight at once.
    for (std::int64_t n = 0; n < N; ++n) {
        T const* dy = dout + n * C;
        T const* x = inp + n * C;
        T const s = rstd[n];
        T const dnorm_norm_mean = static_cast<T>(stats[n] / C_total);
        T* dx = dinp + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
            T const norm = x[c] * s;
            dweight[c] += norm * dy[c];
            dx[c] += (dy[c] * weight[c] - norm * dnorm_norm_mean) * s;
        }
    }
}

template void rmsnorm_statistics<float>(double*, float const*, std::int64_t, int);
template void rmsnorm_statistics<double>(double*, double const*, std::int64_t, int);
template void rmsnorm_forward<float, float>(float*, float*, float const*, float const*, double const*, std::int64_t,
                                            int, int, double);
template void rmsnorm_forward<float, bfloat16>(bfloat16*, float*, float const*, float const*, double const*,
                                               std::int64_t, int, int, double);
template void rmsnorm_forward<double, double>(double*, double*, double const*, double const*, double const*,
                                              std::int64_t, int, int, double);
template void rmsnorm_backward_statistics<float>(double*, float const*, float const*, float const*, float const*,
                                                 std::int64_t, int);
template void rmsnorm_backward_statistics<double>(double*, double const*, double const*, double const*,
                                                  double const*, std::int64_t, int);
template void rmsnorm_backward<float>(float*, float*, float const*, float const*, float const*, float const*,
                                      double const*, std::int64_t, int, int);
template void rmsnorm_backward<double>(double*, double*, double const*, double const*, double const*, double const*,
                                       double const*, std::int64_t, int, int);

}  // namespace axonn::cpu
