// GELU, tanh approximation (GPT-2's): gelu(u) = 0.5 · u · (1 + tanh(sqrt(2/π) · (u + 0.044715 · u³))).
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[n] = gelu(inp[n])
template <typename T> void gelu_forward(T* out, T const* inp, std::int64_t n);

// dinp[n] += gelu'(inp[n]) · dout[n]
template <typename T> void gelu_backward(T* dinp, T const* inp, T const* dout, std::int64_t n);

}  // namespace axonn::cpu
