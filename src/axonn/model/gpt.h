// GPT-2 with an explicit forward and backward over preallocated buffers: no autograd tape.
// The forward walks the layers computing named activations; the backward walks the same list in reverse,
// each kernel's backward the mirror of its forward. Activations are kept for every layer (no recomputation).
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/model/gpt_config.h"
#include "axonn/model/gpt_parameters.h"

#include <cstdint>
#include <span>

namespace axonn {

// One batch of B sequences of T tokens. targets and loss_mask are null for inference.
struct Batch {
    int B = 0;
    int T = 0;
    std::int32_t const* tokens = nullptr;   // [B,T]
    std::int32_t const* targets = nullptr;  // [B,T], -1 = ignore
    float const* loss_mask = nullptr;       // [B,T] weight of each token's loss; null = all 1
};

// Sizes of the activation buffers, for the start-up banner and the memory model.
struct GptMemory {
    std::int64_t parameter_bytes;
    std::int64_t gradient_bytes;
    std::int64_t optimizer_bytes;  // AdamW's two moments
    std::int64_t activation_bytes;
    std::int64_t total() const { return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes; }
};
GptMemory gpt_memory(GptConfig const& config, int max_batch, int max_seq);

class Gpt {
public:
    Gpt(GptConfig const& config, Backend& backend, int max_batch, int max_seq);

    GptConfig const& config() const { return config_; }
    ParamLayout const& layout() const { return layout_; }
    int max_batch() const { return max_batch_; }
    int max_seq() const { return max_seq_; }

    // GPT-2 initialisation from the counter-based RNG: element i of tensor p is a function of (seed, p, i) only.
    void init_weights(std::uint64_t seed);

    std::span<float> params() { return parameters_.span<float>(); }
    std::span<float> grads() { return gradients_.span<float>(); }
    float* param(Param id) { return parameters_.data<float>() + layout_.offset(id); }
    float* grad(Param id) { return gradients_.data<float>() + layout_.offset(id); }

    // Runs the model on the batch and returns the mean loss over the tokens that count (NaN without targets).
    float forward(Batch const& batch);
    // The gradient of the last forward's loss (which needs targets) into grads(): added to what grads() holds
    // (GradWrite::accumulate, e.g. a later micro-batch), or replacing it (GradWrite::overwrite, no zero_grad()
    // needed: the weight-matrix GEMMs write their gradients directly and only the small tensors are zeroed).
    void backward(GradWrite write);
    void zero_grad() { gradients_.zero(); }

    // [B,T,Vp] logits of the last forward; backward overwrites them with their gradient.
    float const* logits() const;

private:
    float* activation(std::int64_t offset) { return activations_.data<float>() + offset; }

    GptConfig config_;
    Backend& backend_;
    int max_batch_;
    int max_seq_;
    ParamLayout layout_;
    Tensor parameters_;
    Tensor gradients_;
    Tensor activations_;
    Tensor activation_grads_;
    Batch last_batch_;
    bool backward_ready_ = false;
};

}  // namespace axonn
