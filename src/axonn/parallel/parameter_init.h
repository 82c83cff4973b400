// Initial weights, from the declarations alone (param_decl.h): element e of tensor p is a function of (seed, p, e)
// only, e being the element's index in the serial tensor, so every rank generates exactly its shard and every
// grid starts from the serial model's weights.
#pragma once

#include "axonn/parallel/shard_layout.h"

#include <cstdint>
#include <span>

namespace axonn {

// Fills this rank's shards (the flat buffer laid out by `layout`): normal(0, init_std) from the counter-based RNG,
// ones or zeros as declared; a tensor's padding rows (from real_rows on) are zero.
void init_parameters(ShardLayout const& layout, std::span<float> params, std::uint64_t seed);

}  // namespace axonn
