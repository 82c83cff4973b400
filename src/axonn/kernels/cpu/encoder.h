// Token + position embedding. B batch, T time, C channels held here, maxT context length.
// With the vocabulary split over processes (G_y > 1) this process holds the embedding rows of token ids
// vocab_begin ... vocab_begin + vocab_rows − 1; other tokens contribute zero here and the outputs are summed
// over the processes (all-reduce over Y). wpe may be null: the position embedding is added by one process only.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[B,T,C] = wte[tokens[b,t] − vocab_begin] (if held here) + wpe[t]      tokens[B,T], wte[vocab_rows,C], wpe[maxT,C]
// wte is of the output's type, or bf16 (mixed precision's copy of the weights) under an fp32 output.
template <typename T, typename W = T>
void encoder_forward(T* out, std::int32_t const* tokens, W const* wte, T const* wpe, int B, int T_, int C,
                     int vocab_begin, int vocab_rows);

// dwte[vocab_rows,C] += dout rows of the tokens held here; dwpe[maxT,C] += dout summed over the batch (if not null)
template <typename T>
void encoder_backward(T* dwte, T* dwpe, T const* dout, std::int32_t const* tokens, int B, int T_, int C,
                      int vocab_begin, int vocab_rows);

}  // namespace axonn::cpu
