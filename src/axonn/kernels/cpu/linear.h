// Fully connected layer, PyTorch convention: weight is [N_out, K_in], out = inp · weightᵀ + bias.
// M rows (tokens), K input channels, N output channels.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// How a backward writes a weight gradient: added to what the buffer holds, or replacing it. A step's first
// backward overwrites, which spares zeroing the largest gradient buffers and re-reading them in the GEMM.
enum class GradWrite { accumulate, overwrite };

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

}  // namespace axonn::cpu
