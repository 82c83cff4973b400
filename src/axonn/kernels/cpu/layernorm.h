// LayerNorm over the last dimension, eps = 1e-5 as in GPT-2. N rows (tokens), C channels.
#pragma once

#include <cstdint>

namespace axonn::cpu {

inline constexpr double layernorm_eps = 1e-5;

// out[N,C] = (inp - mean) · rstd · weight + bias; saves mean[N] and rstd[N] for the backward.
template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, T const* inp, T const* weight, T const* bias, std::int64_t N, int C);

// dinp[N,C] += ..., dweight[C] += ..., dbias[C] += ...      dout[N,C], inp[N,C], mean[N], rstd[N]
template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, T const* dout, T const* inp, T const* weight, T const* mean,
                        T const* rstd, std::int64_t N, int C);

}  // namespace axonn::cpu
