// Attention over a cache of keys and values: the decoding step of generation. A token that has been seen once
// keeps its keys and values (per layer, per head), so each new token costs one row of attention over the cached
// positions instead of a forward over the whole context.
//
// B batch (every row at the same position), n new tokens per row, C = NH·hs query channels, NH query heads, NKV
// key/value heads (query head h reads key/value head h / (NH/NKV), as kernels/cpu/attention.h). qkv holds the new
// tokens' queries, keys and values as the model's activations do: [q (C) | k (NKV·hs) | v (NKV·hs)] per token. The
// cache holds each key/value head's positions contiguously, so a query's dot products walk one [positions, hs]
// block.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// k_cache[B,NKV,capacity,hs] and v_cache[B,NKV,capacity,hs] at positions past ... past+n−1 = the new tokens' keys
// and values.      qkv[B,n,C+2·NKV·hs]
void kv_cache_append(float* k_cache, float* v_cache, float const* qkv, int B, int n, int past, int capacity, int C,
                     int NH, int NKV);

// out[B,n,C] = for each head and new token i, softmax(q_i · k_jᵀ / sqrt(hs)) · v_j over the cached positions
// j = 0 ... past+i (causal), the new tokens' own keys and values included (kv_cache_append first).
//      qkv[B,n,C+2·NKV·hs] (its queries are read), k_cache, v_cache[B,NKV,capacity,hs]
void attention_over_cache(float* out, float const* qkv, float const* k_cache, float const* v_cache, int B, int n,
                          int past, int capacity, int C, int NH, int NKV);

}  // namespace axonn::cpu
