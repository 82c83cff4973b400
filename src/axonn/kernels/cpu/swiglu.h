// SwiGLU, Llama's MLP activation: silu(gate) · up, silu(g) = g · sigmoid(g). The MLP's gate and up projections are
// one Linear whose output row holds [gate (F) | up (F)] (on a Y rank: its F/G_y matching rows of each), so the
// activation halves the width.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[N,F] = silu(gate) · up (T or bf16)      inp[N,2F] = [gate | up] per row
template <typename T, typename Out> void swiglu_forward(Out* out, T const* inp, std::int64_t N, int F);

// dinp[N,2F] = [dout · up · silu'(gate) | dout · silu(gate)] (written, not added)      inp[N,2F] T or held in bf16
// (its rounding alone, widened as read), dout[N,F]
template <typename T, typename In> void swiglu_backward(T* dinp, In const* inp, T const* dout, std::int64_t N, int F);

}  // namespace axonn::cpu
