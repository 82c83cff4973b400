// GPT-2 with an explicit forward and backward over preallocated buffers: no autograd tape. One implementation
// serves every process grid: each rank holds its shards of the weights (parallel/shard_layout.h) and its rows
// of the batch, and the layers talk over the grid's groups (parallel/linear.h, layernorm.h, vocab_parallel.h).
// On the grid 1×1×1×1 every group has one member, no collective runs, and this is the serial model.
// The forward walks the layers computing named activations; the backward walks the same list in reverse.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/model/gpt_config.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/parallel/vocab_parallel.h"

#include <cstdint>
#include <span>
#include <vector>

namespace axonn {

// One batch of B sequences of T tokens: this process's rows. targets and loss_mask are null for inference.
struct Batch {
    int B = 0;
    int T = 0;
    std::int32_t const* tokens = nullptr;   // [B,T]
    std::int32_t const* targets = nullptr;  // [B,T], -1 = ignore
    float const* loss_mask = nullptr;       // [B,T] weight of each token's loss; null = all 1
};

// A contiguous range of the flat parameter buffer that AdamW updates with one weight-decay setting.
struct ParamSegment {
    std::int64_t offset;
    std::int64_t numel;
    bool decay;
};

// Bytes one process allocates for a model and its AdamW, for the start-up banner and the memory model.
struct GptMemory {
    std::int64_t parameter_bytes;
    std::int64_t gradient_bytes;
    std::int64_t optimizer_bytes;   // AdamW's two moments
    std::int64_t activation_bytes;  // kept for the backward, plus the backward's scratch and the statistics
    std::int64_t workspace_bytes;   // weight blocks gathered over Z and their gradients (0 without a Z split)
    std::int64_t total() const {
        return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes + workspace_bytes;
    }
};

// What a Gpt on this grid position with this many local sequences allocates, computed without allocating.
GptMemory gpt_memory(GptConfig const& config, GridShape const& grid, int local_batch, int seq);

class Gpt {
public:
    // local_batch: sequences per step on this process (the global batch / (G_data · G_z)).
    Gpt(GptConfig const& config, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq);

    GptConfig const& config() const { return config_; }
    ShardLayout const& layout() const { return layout_; }
    ProcessGrid& grid() { return grid_; }
    int max_batch() const { return max_batch_; }
    int max_seq() const { return max_seq_; }
    GptMemory memory() const { return gpt_memory(config_, grid_.shape(), max_batch_, max_seq_); }
    std::vector<ParamSegment> segments() const;

    // GPT-2 initialisation from the counter-based RNG: element e of tensor p is a function of (seed, p, e) only,
    // e being the element's index in the serial tensor, so every grid starts from the serial model's weights.
    void init_weights(std::uint64_t seed);

    std::span<float> params() { return parameters_.span<float>(); }
    std::span<float> grads() { return gradients_.span<float>(); }
    float* param(Param id) { return parameters_.data<float>() + layout_.offset(id); }
    float* grad(Param id) { return gradients_.data<float>() + layout_.offset(id); }

    // Runs the model on this process's rows and returns the mean loss over every token of the global batch that
    // counts (the same on all ranks; NaN without targets).
    float forward(Batch const& batch);
    // The gradient of the last forward's loss (which needs targets) into grads(): added to what grads() holds
    // (GradWrite::accumulate, e.g. a later micro-batch), or replacing it (GradWrite::overwrite, no zero_grad()
    // needed: the weight-matrix GEMMs write their gradients directly and only the small tensors are zeroed).
    void backward(GradWrite write);
    void zero_grad() { gradients_.zero(); }
    // Completes the gradients across the grid: the tensors replicated over Z are summed over Z (their rows were
    // split there), then every gradient is summed over data.
    void sync_gradients();
    // Global L2 norm of the (synchronised) gradients, each element of the serial model counted once.
    double gradient_norm();

    // [B, T, Vp/G_y] logits of the last forward (this rank's vocabulary slice); backward overwrites them.
    float const* logits() const;
    VocabSlice vocab_slice() const;

    // The whole serial tensor of a parameter or its gradient, on every rank (a collective over the world).
    Tensor gather(Param id, bool gradient);

private:
    float* activation(std::int64_t offset) { return activations_.data<float>() + offset; }

    GptConfig config_;
    Backend& backend_;
    ProcessGrid& grid_;
    int max_batch_;
    int max_seq_;
    ShardLayout layout_;
    Tensor parameters_;
    Tensor gradients_;
    Tensor activations_;
    Tensor activation_grads_;
    Tensor statistics_;  // [B·T, 2] doubles: LayerNorm and cross-entropy sums between their all-reduces
    Tensor weight_workspace_;  // gathered weight blocks and their gradients, when Z is split
    Batch last_batch_;
    bool backward_ready_ = false;
};

}  // namespace axonn
