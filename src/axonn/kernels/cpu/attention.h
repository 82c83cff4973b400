// Fused causal multi-head self-attention, flash-style: queries in tiles, keys in tiles, an online softmax, and
// a backward that recomputes the probabilities tile by tile. Nothing of size T×T is ever stored: the forward
// keeps one log-sum-exp per query row, and each thread's scratch is a few tiles, copies of one head's operands and
// its key and value gradients ([T,hs] each: three in the forward, seven in the backward; 28 MiB at T = 8,192 and
// hs = 128 in fp32). Key tiles above the diagonal are skipped, so the GEMM work is about half that of full T×T
// attention.
//
// B batch, T time, C = NH·hs channels of the queries and the output, NH query heads, NKV key/value heads (NKV
// divides NH; grouped-query attention when fewer, query head h using key/value head h / (NH/NKV); GPT-2 has
// NKV = NH). qkv holds, for every token, the queries, keys and values side by side: [q (C) | k (NKV·hs) |
// v (NKV·hs)], head h in columns h·hs ... (h+1)·hs of each part.
//
// The fp32 (and double) tile products run on tile_gemm (tile_gemm.h), which costs nothing per call: a library
// GEMM's dispatch and packing took as long as a 64 × 128 × 64 tile's arithmetic. For it, each head's keys (and, in
// the backward, values) are transposed once into [hs,T]. The bf16 products are oneDNN matmul calls, which run on
// AMX only when every matrix of the product is dense. So in both, each head's columns are copied out of the wide
// activation once per head, the tiles of probabilities (and their gradients) are rounded into dense tiles, and the
// output and the gradients are summed in dense tiles and written to their strided places when complete.
#pragma once

#include "axonn/core/bfloat16.h"

#include <cstdint>

namespace axonn::cpu {

// Rows of queries and of keys per tile. A 64 × 128 tile of scores is 32 KiB in fp32, small enough to stay in
// cache. With tile_gemm, measured on one Intel Xeon core at GPT-2 small's heads, no tile of 32-128 queries ×
// 64-256 keys ran more than 6% faster than 64 × 128 at T = 256 or at T = 1024 (32 × 128: 5% faster at T = 256, 9%
// slower at T = 1024). Tests use small tiles to cross many tile boundaries.
struct AttentionTiles {
    int queries = 64;
    int keys = 128;
};
// bf16's tile GEMMs are oneDNN matmul calls, each with a fixed cost of its own: larger tiles, fewer calls. On an
// Intel Xeon with AMX, forward and backward of 1,024 tokens (bench/kernel_bench.cpp), T = 256 and T = 1024: 128 ×
// 256 11.8 and 28.4 ms, 256 × 256 12.0 and 27.3, 128 × 128 12.3 and 31.9, 64 × 256 12.5 and 30.6, 64 × 128 13.6
// and 35.6.
inline constexpr AttentionTiles bf16_attention_tiles{128, 256};

// Whether mixed precision runs attention in bf16 for sequences of T tokens. A sequence within one bf16 query tile
// skips no tiles above the diagonal, and rounding qkv, dout and each tile of probabilities costs more than bf16's
// faster GEMMs win back: T = 64 and 128 ran faster in fp32 on an Intel Xeon with AMX, T = 64 on a Zen 5 core,
// and T = 256 and 1024 faster in bf16 on both (bench/kernel_bench.cpp; docs/PERFORMANCE.md). With the fp32 tiles
// on tile_gemm, a bf16 step at T = 256 and 1024 still ran 10-12% faster with bf16 attention on the Intel Xeon.
// Once the bf16 tiles ran on AMX (dense operands), the kernels alone were faster in bf16 at T = 128 too (8.8
// against 9.5 ms), but a bf16 step at T = 128 was not: the roundings of qkv and dout took what attention saved.
inline bool attention_in_bf16(int T) { return T > bf16_attention_tiles.queries; }

// The score entries per head that the kernels compute for a sequence of T tokens: the lower triangle rounded out
// to whole tiles along the diagonal (T² while T fits one query tile, about T²/2 for long sequences).
std::int64_t attention_scores_computed(int T_, AttentionTiles tiles = {});

// out[B,T,C] = each head's softmax(q kᵀ / sqrt(hs), causal) · v;  lse[B,NH,T] = the log-sum-exp of each row of
// scaled scores, kept for the backward.      qkv[B,T,C+2·NKV·hs]
template <typename T>
void attention_forward(T* out, T* lse, T const* qkv, int B, int T_, int C, int NH, int NKV,
                       AttentionTiles tiles = {});

// dqkv[B,T,C+2·NKV·hs] = the gradient of the forward's out (written: a key/value head's from all its query heads).
//      dout[B,T,C], qkv[B,T,C+2·NKV·hs], out[B,T,C], lse[B,NH,T]
template <typename T>
void attention_backward(T* dqkv, T const* dout, T const* qkv, T const* out, T const* lse, int B, int T_, int C,
                        int NH, int NKV, AttentionTiles tiles = {});

// The same in mixed precision: every tile GEMM on bf16 inputs with fp32 accumulation (qkv and dout rounded to
// bf16 once by the caller, each tile of probabilities and of their gradients as it goes into a GEMM); the
// softmax, its statistics, out, lse and dqkv stay fp32. The backward's row sums D = dO·O read the same bf16 dO
// as its GEMMs, so that dP − D cancels as it does in exact arithmetic (with fp32 dO, a one-token row's dS would be
// rounding noise instead of zero).
// qkv[B,T,C+2·NKV·hs] bf16, dout[B,T,C] bf16; the rest as above
void attention_forward_bf16(float* out, float* lse, bfloat16 const* qkv, int B, int T_, int C, int NH, int NKV,
                            AttentionTiles tiles = bf16_attention_tiles);
void attention_backward_bf16(float* dqkv, bfloat16 const* dout, bfloat16 const* qkv, float const* out,
                             float const* lse, int B, int T_, int C, int NH, int NKV,
                             AttentionTiles tiles = bf16_attention_tiles);

}  // namespace axonn::cpu
