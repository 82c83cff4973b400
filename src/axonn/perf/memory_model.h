// Predicted bytes per rank of a training step: weights, gradients, AdamW's moments, activations (with or without
// activation checkpointing), gathered-weight buffers and communication buckets. Without checkpointing and in fp32
// this is exactly what model/gpt.cpp allocates; the perfmodel tests compare it with the allocator's peak.
#pragma once

#include "axonn/perf/traffic_model.h"

#include <cstdint>

namespace axonn {

struct MemoryOptions {
    bool activation_checkpointing = false;  // keep only each layer's input; recompute the rest in the backward
    int weight_bytes = 4;                   // fp32 master weights
    int extra_weight_copy_bytes = 0;        // e.g. 2 for a bf16 copy of the weights used by the GEMMs
};

struct MemoryPrediction {
    std::int64_t weights, gradients, optimizer, activations, gathered_weights, buckets;
    std::int64_t total() const { return weights + gradients + optimizer + activations + gathered_weights + buckets; }
};

MemoryPrediction predict_memory(StepShape const& step, MemoryOptions const& options);

}  // namespace axonn
