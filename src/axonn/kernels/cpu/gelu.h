// GELU, tanh approximation (GPT-2's): gelu(u) = 0.5 · u · (1 + tanh(sqrt(2/π) · (u + 0.044715 · u³))), fused
// with the bias of the Linear that feeds it: the Linear's GEMM writes its product without the bias, and one pass
// adds the bias, keeps the sum (the backward's input) and applies GELU; the backward's pass writes the input
// gradient and sums the bias gradient from the same values. Each replaces two sweeps over [N, F] with one.
#pragma once

#include "axonn/core/bfloat16.h"

#include <cstdint>

namespace axonn::cpu {

// pre[N,F] += bias[F] (when bias is not null); out[N,F] = gelu(pre) (T or bf16)
template <typename T, typename Out> void bias_gelu_forward(Out* out, T* pre, T const* bias, std::int64_t N, int F);
// The same with pre + bias kept as its bf16 rounding alone, kept_pre[N,F] (mixed precision's kept pre-activation),
// pre left as the Linear's GEMM wrote it: bitwise what the pass above and a rounding of pre give, one pass fewer.
template <typename Out>
void bias_gelu_forward(Out* out, bfloat16* kept_pre, float const* pre, float const* bias, std::int64_t N, int F);

// dpre[N,F] = gelu'(pre) · dout (written, not added; dpre may be dout), T or (for bf16 GEMMs alone) its bf16
// rounding; dbias[F] += Σ_n dpre[n,:] in row order, unrounded (when not null)      pre[N,F] T or held in bf16 (its
// rounding alone, widened as read), dout[N,F]
template <typename T, typename Out, typename In>
void gelu_bias_backward(Out* dpre, T* dbias, In const* pre, T const* dout, std::int64_t N, int F);

}  // namespace axonn::cpu
