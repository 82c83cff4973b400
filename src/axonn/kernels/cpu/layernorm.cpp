#include "axonn/kernels/cpu/layernorm.h"

#include <cmath>

namespace axonn::cpu {

template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, T const* inp, T const* weight, T const* bias, std::int64_t N, int C) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* x = inp + n * C;
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int c = 0; c < C; ++c) sum += x[c];
        T const m = sum / C;
        // Two passes (mean, then centred squares) rather than E[x²]−E[x]², which cancels badly in fp32.
        T squares = 0;
#pragma omp simd reduction(+ : squares)
        for (int c = 0; c < C; ++c) squares += (x[c] - m) * (x[c] - m);
        T const s = T(1) / std::sqrt(squares / C + static_cast<T>(layernorm_eps));
        T* y = out + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, T const* dout, T const* inp, T const* weight, T const* mean,
                        T const* rstd, std::int64_t N, int C) {
    // The parameter gradients sum over all rows; rows run serially so no two rows write dweight at once.
    for (std::int64_t n = 0; n < N; ++n) {
        T const* dy = dout + n * C;
        T const* x = inp + n * C;
        T const m = mean[n];
        T const s = rstd[n];
        // dnorm = dy · weight; dx = s · (dnorm − mean(dnorm) − norm · mean(dnorm · norm))
        T dnorm_mean = 0;
        T dnorm_norm_mean = 0;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
        for (int c = 0; c < C; ++c) {
            T const norm = (x[c] - m) * s;
            T const dnorm = dy[c] * weight[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
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

template void layernorm_forward<float>(float*, float*, float*, float const*, float const*, float const*, std::int64_t,
                                       int);
template void layernorm_forward<double>(double*, double*, double*, double const*, double const*, double const*,
                                        std::int64_t, int);
template void layernorm_backward<float>(float*, float*, float*, float const*, float const*, float const*, float const*,
                                        float const*, std::int64_t, int);
template void layernorm_backward<double>(double*, double*, double*, double const*, double const*, double const*,
                                         double const*, double const*, std::int64_t, int);

}  // namespace axonn::cpu
