#include "axonn/kernels/cpu/linear.h"

#include "axonn/kernels/cpu/gemm.h"

namespace axonn::cpu {
namespace {

// out[M,N] += bias[N] (if not null)
template <typename T>
void add_bias(T* out, T const* bias, std::int64_t M, std::int64_t N) {
    if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
    for (std::int64_t m = 0; m < M; ++m) {
#pragma omp simd
        for (std::int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
    }
}

// dbias[N] += Σ_m dout[m,:] (if not null)
template <typename T>
void accumulate_bias_gradient(T* dbias, T const* dout, std::int64_t M, std::int64_t N) {
    if (dbias == nullptr) return;
    for (std::int64_t m = 0; m < M; ++m) {
#pragma omp simd
        for (std::int64_t n = 0; n < N; ++n) dbias[n] += dout[m * N + n];
    }
}

float beta_of(GradWrite write) { return write == GradWrite::accumulate ? 1.0f : 0.0f; }

}  // namespace

template <typename T>
void linear_forward(T* out, T const* inp, T const* weight, T const* bias, std::int64_t M, std::int64_t K,
                    std::int64_t N) {
    gemm<T>(false, true, M, N, K, T(1), inp, K, weight, K, T(0), out, N);
    add_bias(out, bias, M, N);
}

template <typename T>
void linear_backward_input(T* dinp, T const* dout, T const* weight, std::int64_t M, std::int64_t K, std::int64_t N) {
    gemm<T>(false, false, M, K, N, T(1), dout, N, weight, K, T(0), dinp, K);
}

template <typename T>
void linear_backward_weight(T* dweight, T* dbias, T const* dout, T const* inp, std::int64_t M, std::int64_t K,
                            std::int64_t N, GradWrite dweight_write) {
    gemm<T>(true, false, N, K, M, T(1), dout, N, inp, K, T(beta_of(dweight_write)), dweight, K);
    accumulate_bias_gradient(dbias, dout, M, N);
}

void linear_forward(float* out, bfloat16 const* inp, bfloat16 const* weight, float const* bias, std::int64_t M,
                    std::int64_t K, std::int64_t N) {
    gemm_bf16(false, true, M, N, K, inp, K, weight, K, 0.0f, out, N);
    add_bias(out, bias, M, N);
}

void linear_backward_input(float* dinp, bfloat16 const* dout, bfloat16 const* weight, std::int64_t M, std::int64_t K,
                           std::int64_t N) {
    gemm_bf16(false, false, M, K, N, dout, N, weight, K, 0.0f, dinp, K);
}

void linear_backward_weight(float* dweight, float* dbias, bfloat16 const* dout, float const* dout_f32,
                            bfloat16 const* inp, std::int64_t M, std::int64_t K, std::int64_t N,
                            GradWrite dweight_write) {
    gemm_bf16(true, false, N, K, M, dout, N, inp, K, beta_of(dweight_write), dweight, K);
    accumulate_bias_gradient(dbias, dout_f32, M, N);
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
