// The collectives that run beside a model's layers through a step, each over its group of the grid: the weights'
// Z all-gathers (weight_gather.h), the weight gradients' Z reduce-scatters (grad_scatter.h) and the gradient sync
// over Z and data (gradient_sync.h). A model builds one and hands its parts to the parallel layers.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/grad_scatter.h"
#include "axonn/parallel/gradient_sync.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/parallel/weight_gather.h"

#include <cstdint>

namespace axonn {

struct StepCollectivesOptions {
    DType precision = DType::f32;      // the gathered weights' type: the GEMMs'
    std::int64_t max_block_numel = 0;  // the largest Linear block gathered or reduce-scattered
    std::int64_t cached_numel = 0;     // with weight caching, every block's elements (0: no caching)
    int scatter_ring = 4;              // reduce-scatters in flight before the first is waited on
    bool overlap = true;
    DType grad_scatter_comm = DType::f32;  // the reduce-scatters' wire type
    DType grad_sum_comm = DType::f32;      // the data all-reduces' wire type
};

struct StepCollectives {
    StepCollectives(ProcessGrid& grid, Backend& backend, ShardLayout const& layout,
                    StepCollectivesOptions const& options);

    WeightGather weights;
    GradScatter weight_grads;
    GradientSync sync;
};

}  // namespace axonn
