// Causal multi-head self-attention from batched GEMMs. B batch, T time, C channels, NH heads, hs = C/NH.
// qkv holds, for every token, the query, key and value of all heads side by side: [q (C) | k (C) | v (C)],
// head h in columns h·hs ... (h+1)·hs of each. Each head's GEMMs read its columns in place (row stride 3C),
// so nothing is transposed or copied.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[B,T,C]: each head's softmax(q kᵀ / sqrt(hs), causal) · v.      qkv[B,T,3C]
// att[B,NH,T,T] keeps the probabilities (zero above the diagonal) for the backward.
template <typename T>
void attention_forward(T* out, T* att, T const* qkv, int B, int T_, int C, int NH);

// dqkv[B,T,3C] += ...      dout[B,T,C], qkv[B,T,3C], att[B,NH,T,T]
template <typename T>
void attention_backward(T* dqkv, T const* dout, T const* qkv, T const* att, int B, int T_, int C, int NH);

}  // namespace axonn::cpu
