// A whole serial tensor from every rank's shards: for checks and tools, never a training step. Each owning rank of
// the first data replica writes its elements at their serial indices (parallel/shard_layout.h) into a zeroed
// tensor, and an all-reduce over the world fills in the rest.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/parallel/shard_layout.h"

namespace axonn {

// The serial tensor of parameter `id`, of which this rank holds local[layout.local_numel(id)] in host memory; on
// every rank (a collective over the world). A replicated row counts from its first replica only.
Tensor gather_serial_tensor(ShardLayout const& layout, ProcessGrid& grid, int id, float const* local);

}  // namespace axonn
