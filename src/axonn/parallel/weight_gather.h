// The Z all-gathers of a pass's weight blocks (AxoNN's OAG). A Linear's weight is held as 1/G_z of its
// [N/G_O, K/G_F] block on each Z rank; before its GEMM the block is all-gathered over Z. The pass declares its
// weight uses in execution order (forward, then the backward's re-gathers, recomputed forwards included), and
// next() hands out each block in turn:
//   overlap on:  the gather of use i+1 is issued as soon as use i's is waited on, into the other of two buffers,
//                so it runs while use i's GEMM computes (the first is issued by begin_pass);
//   overlap off: each gather is issued and waited on when its use comes (the same calls, one at a time);
//   caching:     every weight keeps its own buffer for the step (AxoNN's weight caching): a weight gathered once is
//                not gathered again in later micro-batches, the recomputed forward or the backward, at the cost of
//                holding all gathered blocks. invalidate() drops them (the optimizer changed the weights).
// Without a Z split there is nothing to gather: next() returns the shard itself. Weights are gathered in the
// precision the GEMMs take (fp32, or bf16 in mixed precision: half the bytes).
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/types.h"

#include <cstdint>
#include <map>
#include <vector>

namespace axonn {

// One use of a weight in a pass: its shard on this rank (in the gather's precision), and its gathered block's size.
struct WeightUse {
    void const* shard;
    std::int64_t block_numel;
};

class WeightGather {
public:
    // cached_numel: with caching, the elements of all the blocks that may be cached (0: no caching); dtype: the
    // element type of the shards and blocks; memory: where they live (the backend's).
    WeightGather(Communicator& z, DType dtype, std::int64_t max_block_numel, bool overlap, std::int64_t cached_numel,
                 Memory memory);
    WeightGather(WeightGather const&) = delete;
    WeightGather& operator=(WeightGather const&) = delete;

    // Starts a pass that uses the weights in this order.
    void begin_pass(std::vector<WeightUse> schedule);
    // The gathered block of the pass's next use, complete.
    WeightView next();
    // Drops the cached blocks; with no caching, nothing to do.
    void invalidate();
    // The elements this object holds, for the memory model.
    static std::int64_t buffer_numel(int z, std::int64_t max_block_numel, std::int64_t cached_numel);

private:
    struct Slot {
        std::int64_t offset = 0;  // of its buffer in storage_, in elements
        Collective gather;
        void const* holds = nullptr;  // the shard whose block it holds, or is being gathered into it
        std::size_t use = 0;          // for a ring slot: the use it was gathered for
    };
    Slot& slot_for(std::size_t use);
    void issue(std::size_t use);
    void* buffer(Slot const& slot);

    Communicator& z_;
    DType dtype_;
    bool overlap_;
    bool caching_;
    Tensor storage_;  // a tensor, so that the allocator's peak (the memory model's check) counts it
    std::vector<Slot> ring_;                      // two, without caching
    std::map<void const*, Slot> cache_;           // one per weight, with caching
    std::int64_t cache_used_ = 0;
    std::vector<WeightUse> schedule_;
    std::size_t next_use_ = 0;
};

}  // namespace axonn
