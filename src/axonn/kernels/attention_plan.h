// How the fused attention computes a causal sequence, for what must know it without running it: the model's memory
// accounting and the time model. The kernels' own headers (kernels/cpu/attention.h) stay behind the backend.
#pragma once

#include "axonn/kernels/types.h"

#include <cstdint>

namespace axonn {

struct AttentionPlan {
    bool in_bf16;                  // its tile GEMMs on bf16 copies of qkv and dout (mixed precision, long sequences)
    int query_tile;                // queries per tile (at most T)
    std::int64_t scores_computed;  // score entries per head: the lower triangle rounded out to whole tiles
};

// Fused attention of a sequence of T tokens with GEMMs in `precision` (f32 or bf16). In mixed precision a sequence
// within one bf16 query tile runs in fp32: it skips no tiles above the diagonal, and rounding costs more there.
AttentionPlan attention_plan(DType precision, int T);

}  // namespace axonn
