#include "axonn/kernels/cpu/linear.h"

#include "axonn/kernels/cpu/gemm.h"

namespace axonn::cpu {

template <typename T>
void linear_forward(T* out, T const* inp, T const* weight, T const* bias, std::int64_t M, std::int64_t K,
                    std::int64_t N) {
    gemm<T>(false, true, M, N, K, T(1), inp, K, weight, K, T(0), out, N);
    if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
    for (std::int64_t m = 0; m < M; ++m) {
#pragma omp simd
        for (std::int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
    }
}

template <typename T>
void linear_backward_input(T* dinp, T const* dout, T const* weight, std::int64_t M, std::int64_t K, std::int64_t N) {
    gemm<T>(false, false, M, K, N, T(1), dout, N, weight, K, T(0), dinp, K);
}

template <typename T>
void linear_backward_weight(T* dweight, T* dbias, T const* dout, T const* inp, std::int64_t M, std::int64_t K,
                            std::int64_t N, GradWrite dweight_write) {
    T const dweight_beta = dweight_write == GradWrite::accumulate ? T(1) : T(0);
    gemm<T>(true, false, N, K, M, T(1), dout, N, inp, K, dweight_beta, dweight, K);
    if (dbias == nullptr) return;
    for (std::int64_t m = 0; m < M; ++m) {
#pragma omp simd
        for (std::int64_t n = 0; n < N; ++n) dbias[n] += dout[m * N + n];
    }
}

template void linear_forward<float>(float*, float const*, float const*, float const*, std::int64_t, std::int64_t,
                                    std::int64_t);
template void linear_forward<double>(double*, double const*, double const*, double const*, std::int64_t, std::int64_t,
                                     std::int64_t);
template void linear_backward_input<float>(float*, float const*, float const*, std::int64_t, std::int64_t,
                                           std::int64_t);
template void linear_backward_input<double>(double*, double const*, double const*, std::int64_t, std::int64_t,
                                            std::int64_t);
template void linear_backward_weight<float>(float*, float*, float const*, float const*, std::int64_t, std::int64_t,
                                            std::int64_t, GradWrite);
template void linear_backward_weight<double>(double*, double*, double const*, double const*, std::int64_t,
                                             std::int64_t, std::int64_t, GradWrite);

}  // namespace axonn::cpu
