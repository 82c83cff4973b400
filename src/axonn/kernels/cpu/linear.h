// Fully connected layer, PyTorch convention: weight is [N_out, K_in], out = inp · weightᵀ + bias.
// M rows (tokens), K input channels, N output channels.
#pragma once

#include "axonn/core/bfloat16.h"
#include "axonn/kernels/types.h"

#include <cstdint>

namespace axonn::cpu {

// out[M,N] = inp[M,K] · weight[N,K]ᵀ + bias[N]      (bias may be null)
template <typename T>
void linear_forward(T* out, T const* inp, T const* weight, T const* bias, std::int64_t M, std::int64_t K,
                    std::int64_t N);

// The backward in its two GEMMs, so that the input gradient's all-reduce can run while the weight gradient is
// computed (AxoNN's OAR):
// dinp[M,K] = dout[M,N] · weight[N,K]      (written, not accumulated: the GEMM's β is 0)
template <typename T>
void linear_backward_input(T* dinp, T const* dout, T const* weight, std::int64_t M, std::int64_t K, std::int64_t N);

// dweight[N,K] (+)= dout[M,N]ᵀ · inp[M,K] as `dweight_write` says;  dbias[N] += Σ_m dout[m,:] (if not null)
template <typename T>
void linear_backward_weight(T* dweight, T* dbias, T const* dout, T const* inp, std::int64_t M, std::int64_t K,
                            std::int64_t N, GradWrite dweight_write);

// Mixed precision: the same GEMMs on bf16 operands with fp32 accumulation and fp32 results. The bias terms read
// fp32 values: bias[N] here, and the fp32 dout[M,N] (dout_f32) for dbias.
void linear_forward(float* out, bfloat16 const* inp, bfloat16 const* weight, float const* bias, std::int64_t M,
                    std::int64_t K, std::int64_t N);
void linear_backward_input(float* dinp, bfloat16 const* dout, bfloat16 const* weight, std::int64_t M, std::int64_t K,
                           std::int64_t N);
void linear_backward_weight(float* dweight, float* dbias, bfloat16 const* dout, float const* dout_f32,
                            bfloat16 const* inp, std::int64_t M, std::int64_t K, std::int64_t N,
                            GradWrite dweight_write);

}  // namespace axonn::cpu
