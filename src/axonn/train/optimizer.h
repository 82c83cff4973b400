// AdamW over the model's flat parameter buffer, with global gradient-norm clipping. The moments are allocated
// up front (an out-of-memory error happens at start-up, not hours in) and only weight matrices are decayed.
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/shard_layout.h"

#include <span>
#include <vector>

namespace axonn {

struct AdamWConfig {
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
    float grad_clip = 1.0f;  // maximum global gradient norm; 0 turns clipping off

    void validate() const;
};

class AdamW {
public:
    // segments: the ranges of the flat parameter buffer, each with its weight-decay setting (param_segments()).
    AdamW(std::vector<ParamSegment> segments, std::int64_t total, Backend& backend, AdamWConfig const& config);

    // Clips the gradients to grad_clip by their global norm `norm`, and updates the parameters at this lr;
    // params_bf16, when not null, receives the updated parameters in bf16 (the model's GEMM copy). Every buffer is
    // in the backend's memory, where the moments are kept too.
    void step(std::span<float> params, std::span<float const> grads, double norm, float learning_rate,
              bfloat16* params_bf16 = nullptr);

    // The moments, in the parameters' layout, and the number of steps taken (the bias correction's t): what a
    // checkpoint keeps and a resumed run restores (host memory only).
    std::span<float> exp_avg() { return m_.span<float>(); }
    std::span<float> exp_avg_sq() { return v_.span<float>(); }
    // The moments to and from host memory, whatever the backend's: each span of the parameters' size.
    void copy_moments_to_host(std::span<float> exp_avg, std::span<float> exp_avg_sq) const;
    void copy_moments_from_host(std::span<float const> exp_avg, std::span<float const> exp_avg_sq);
    int steps_taken() const { return steps_taken_; }
    void restore_steps_taken(int steps) { steps_taken_ = steps; }

private:
    std::vector<ParamSegment> segments_;
    Backend& backend_;
    AdamWConfig config_;
    Tensor m_;
    Tensor v_;
    int steps_taken_ = 0;
};

}  // namespace axonn
