// Key/value rows replicated over Y (more Y ranks than key/value heads, as Megatron does): each replica's gradient
// holds only its own query heads' part, and the sum over the Y ranks that share a head is the gradient, on every
// replica alike. The sum runs once the gradient sync has summed them over Z and data (summing in that order keeps
// every grid's gradients those of one order of additions); the gradient norm reads them next, so nothing is left
// to compute under it and it is blocking.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/shard_layout.h"

#include <cstdint>

namespace axonn {

class ReplicatedRowSum {
public:
    // sum_comm: the all-reduce's wire type (f32, or bf16 with --grad-comm bf16).
    ReplicatedRowSum(ProcessGrid& grid, Backend& backend, ShardLayout const& layout, DType sum_comm);

    // Sums the replicated rows of every tensor of the flat gradient buffer grads[layout.total()] over Y.
    void sum(float* grads);

    // Bytes its buffers take, for the memory model.
    static std::int64_t workspace_bytes(ShardLayout const& layout, int y, DType sum_comm);

private:
    ProcessGrid& grid_;
    Backend& backend_;
    ShardLayout const& layout_;
    DType sum_comm_;
    Tensor sums_;     // one slot per group of replicas, each room for a tensor's replicated rows
    Tensor staging_;  // the same in bf16, with bf16 sums
};

}  // namespace axonn
