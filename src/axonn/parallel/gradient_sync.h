// The gradient sync of a step, overlapped with the backward that produces the gradients. A gradient is complete
// when it is summed over Z (for the tensors replicated there: their rows of the batch were split over Z) and then
// over data; the Z-sharded weights get their Z sum from their reduce-scatter (grad_scatter.h). The model reports
// slices of the flat gradient buffer (a tensor's slice of one layer, or a whole tensor) as they become final, in
// the order the backward finishes them, and each goes through two stages:
//   1. at once: the Z all-reduce of a replicated slice is started;
//   2. when the next slices are reported (a layer later) or at finish(): its Z sum is waited on (the all-reduce,
//      or the weight's reduce-scatter), and its data all-reduce is started; without a Z split, at once.
// (When a stage runs depends only on the grid and the order of the reports, never on when a collective happens
// to finish: every rank must issue the data group's collectives in the same order.)
// finish() waits for all of them. With overlap off every collective is waited on as soon as it is started: the
// same calls in the same order, so the gradients are bitwise the same. Every rank reports the same slices in the
// same order, so every group issues its collectives in one order.
// With bf16 gradient communication the data all-reduces move a bf16 copy of each slice (a bf16 mirror of the
// gradient buffer), widened back into the fp32 gradients when they complete; the Z all-reduces of the replicated
// vectors (biases, LayerNorm weights: few bytes) stay fp32.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/grad_scatter.h"
#include "axonn/parallel/rounded_sum.h"
#include "axonn/parallel/shard_layout.h"

#include <vector>

namespace axonn {

// A tensor's gradient of one layer (layer 0 for a tensor that is not stacked per layer).
struct GradSlice {
    GradSlice(ParamIndex auto param_index, int layer_index = 0)
        : param(static_cast<int>(param_index)), layer(layer_index) {}
    int param;
    int layer;
};

class GradientSync {
public:
    GradientSync(ShardLayout const& layout, Backend& backend, Communicator& z, Communicator& data,
                 GradScatter& scatter, bool overlap, DType comm_dtype = DType::f32);
    GradientSync(GradientSync const&) = delete;
    GradientSync& operator=(GradientSync const&) = delete;

    // A backward that syncs starts; `grads` is the flat gradient buffer.
    void begin(float* grads);
    // These slices will not change again in this backward (their reduce-scatters may still be running).
    void final(std::vector<GradSlice> const& slices);
    // Every gradient is final: completes the sync.
    void finish();

    // bf16 elements of the mirror that bf16 communication needs (0 when it does not)
    static std::int64_t mirror_numel(ShardLayout const& layout, int data, DType comm_dtype);

private:
    struct InFlight {
        float* data;
        std::size_t numel;
        bool z_sharded;
        Collective z_sum;
    };
    void start_data_sums();  // stage 2 for everything reported so far

    ShardLayout const& layout_;
    Backend& backend_;
    Communicator& z_;
    Communicator& data_;
    GradScatter& scatter_;
    bool overlap_;
    DType comm_dtype_;  // the data sums' wire type
    Tensor mirror_;   // bf16, at the gradient buffer's offsets (one element when unused)
    float* grads_ = nullptr;
    std::vector<InFlight> awaiting_data_;
    std::vector<RoundedSum> data_sums_;
};

// Global L2 norm of the (synchronised) gradients `grads`, laid out by `layout`, each element of the serial model
// counted once: each rank sums the squares of the tensors it owns, then the tensor-parallel block (Group::tensor)
// sums. The optimizer's clipping needs it at once: a blocking all-reduce.
double gradient_norm(ShardLayout const& layout, Backend& backend, float const* grads, ProcessGrid& grid);

}  // namespace axonn
