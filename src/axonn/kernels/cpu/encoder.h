// Token + position embedding. B batch, T time, C channels, Vp padded vocabulary, maxT context length.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[B,T,C] = wte[tokens[b,t], :] + wpe[t, :]      tokens[B,T], wte[Vp,C], wpe[maxT,C]
template <typename T>
void encoder_forward(T* out, std::int32_t const* tokens, T const* wte, T const* wpe, int B, int T_, int C);

// dwte[Vp,C] += scatter of dout rows by token; dwpe[maxT,C] += dout summed over the batch      dout[B,T,C]
template <typename T>
void encoder_backward(T* dwte, T* dwpe, T const* dout, std::int32_t const* tokens, int B, int T_, int C);

}  // namespace axonn::cpu
