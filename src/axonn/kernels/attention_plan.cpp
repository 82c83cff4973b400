#include "axonn/kernels/attention_plan.h"

#include "axonn/kernels/cpu/attention.h"

#include <algorithm>

namespace axonn {

AttentionPlan attention_plan(DType precision, int T) {
    bool const in_bf16 = precision == DType::bf16 && cpu::attention_in_bf16(T);
    cpu::AttentionTiles const tiles = in_bf16 ? cpu::bf16_attention_tiles : cpu::AttentionTiles{};
    return {in_bf16, std::min(T, tiles.queries), cpu::attention_scores_computed(T, tiles)};
}

}  // namespace axonn
