// The tensors a checkpoint holds, each with this rank's shard of it: the model's parameters and, for a training
// state, AdamW's two moments, which share the parameters' layout. What the writer and the reader both walk.
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/parallel/shard_layout.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace axonn {

// This rank's shards, in its ShardLayout's flat order: the model's declarations with its vocabulary laid out as
// `vocab_split` says, by default as a Decoder's default options lay it out (on a grid with x = 1 both are one).
struct LocalTensors {
    std::span<float const> params;
    std::span<float const> exp_avg;     // AdamW's moments; empty for weights alone
    std::span<float const> exp_avg_sq;
    VocabSplit vocab_split = VocabSplit::xy;
};

struct CheckpointTensor {
    std::string name;  // "wte", "exp_avg.wte", ...
    int param;         // its index in the layout
    Shape shape;       // serial, padding rows included
    std::span<float const> local;

    std::int64_t numel() const { return shape_numel(shape); }
};

// The weights, then (if `local` has them) the first moments, then the second, each in the layout's order of
// declaration.
std::vector<CheckpointTensor> checkpoint_tensors(ShardLayout const& layout, LocalTensors const& local);

// Rank r of `ranks` stores elements [range_begin(n, r, ranks), range_begin(n, r + 1, ranks)) of a tensor of n.
inline std::int64_t range_begin(std::int64_t n, int rank, int ranks) {
    return static_cast<std::int64_t>(static_cast<__int128>(n) * rank / ranks);
}

}  // namespace axonn
