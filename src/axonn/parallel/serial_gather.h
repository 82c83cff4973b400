// Whole serial tensors from every rank's shards: for checks and tools, never a training step. Each owning rank of
// the first data replica writes its elements at their serial indices (parallel/shard_layout.h) into a zeroed
// buffer, and an all-reduce over the world fills in the rest.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/parallel/shard_layout.h"

#include <vector>

namespace axonn {

// Every parameter's serial tensor, indexed by id, from this rank's flat storage in host memory (parameter `id` at
// local + layout.offset(id), layout.local_numel(id) elements); on every rank. One all-reduce over the world for
// them all: a collective per tensor made every check of a whole model wait once per tensor for the slowest rank.
// A replicated row counts from its first replica only.
std::vector<Tensor> gather_serial_tensors(ShardLayout const& layout, ProcessGrid& grid, float const* local);

}  // namespace axonn
