// Fully connected layer, PyTorch convention: weight is [N_out, K_in], out = inp · weightᵀ + bias.
// M rows (tokens), K input channels, N output channels.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[M,N] = inp[M,K] · weight[N,K]ᵀ + bias[N]      (bias may be null)
template <typename T>
void linear_forward(T* out, T const* inp, T const* weight, T const* bias, std::int64_t M, std::int64_t K,
                    std::int64_t N);

// dinp[M,K] += dout[M,N] · weight[N,K];  dweight[N,K] += dout[M,N]ᵀ · inp[M,K];  dbias[N] += Σ_m dout[m,:]
template <typename T>
void linear_backward(T* dinp, T* dweight, T* dbias, T const* dout, T const* inp, T const* weight, std::int64_t M,
                     std::int64_t K, std::int64_t N);

}  // namespace axonn::cpu
