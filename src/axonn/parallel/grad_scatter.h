// The Z reduce-scatters of the weight gradients (AxoNN's ORS). With Z split, a Linear's backward computes the
// gradient of its whole gathered block; each Z rank keeps the sum, over Z, of its own 1/G_z of it. The block is
// written into one of a ring of buffers and its reduce-scatter started; it completes while the backward goes on,
// and is waited on only where its result is needed: when the gradient sync takes the shard, or when its buffer
// comes round again in the ring (a ring of `ring` blocks holds one layer's four Linears by default).
// Overlap off waits at once: the same calls, one at a time. Without a Z split the gradient goes straight into
// the shard. With bf16 reduce-scatters (--grad-comm bf16 or bf16-scatter) a block is rounded to bf16 before it is sent,
// summed in bf16, and widened back into the fp32 shard: half the bytes, at the cost of bf16 rounding.
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/rounded_sum.h"

#include <cstdint>
#include <vector>

namespace axonn {

// Where a Linear's backward writes its weight gradient, and how.
struct GradTarget {
    float* block;
    GradWrite write;
};

class GradScatter {
public:
    GradScatter(Backend& backend, Communicator& z, std::int64_t max_block_numel, int ring, bool overlap,
                DType comm_dtype = DType::f32);
    GradScatter(GradScatter const&) = delete;
    GradScatter& operator=(GradScatter const&) = delete;

    // The buffer for the next weight-gradient block, whose shard is `shard`, written or accumulated as `write`
    // says: a ring buffer (overwritten) with a Z split, else the shard itself.
    GradTarget target(float* shard, GradWrite write);
    // Starts the reduce-scatter of the block just written into the target's shard.
    void submit(std::int64_t block_numel);
    // Completes the pending reduce-scatter into `shard`, if any; then its gradient is final.
    void complete(float const* shard);
    void complete_all();
    // fp32 elements of the ring, and bf16 elements of its staging copy (with bf16 communication)
    static std::int64_t buffer_numel(int z, std::int64_t max_block_numel, int ring);
    static std::int64_t staging_numel(int z, std::int64_t max_block_numel, int ring, DType comm_dtype);

private:
    struct Pending {
        RoundedSum scatter;
        float* shard = nullptr;       // destination
        float* received = nullptr;    // the scattered sum, when it is to be added to the shard
        std::int64_t shard_numel = 0;
    };
    void finish(Pending& pending);

    Backend& backend_;
    Communicator& z_;
    bool overlap_;
    DType comm_dtype_;
    std::int64_t max_block_numel_;
    // Tensors, so that the allocator's peak (the memory model's check) counts them: the ring's blocks, then one
    // received shard per ring slot; with bf16 communication the same again in bf16.
    Tensor storage_;
    Tensor staging_;
    std::vector<Pending> ring_;
    std::size_t next_slot_ = 0;
    float* shard_ = nullptr;      // of the current target
    GradWrite write_ = GradWrite::overwrite;
};

}  // namespace axonn
