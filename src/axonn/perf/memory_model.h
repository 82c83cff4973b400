// Predicted bytes per rank of a training step: weights, gradients, AdamW's moments, activations (all layers', or
// each layer's input and one layer's rest when recomputing), the gathered-weight and weight-gradient buffers of
// the Z split (two blocks, or every block when caching, and a ring of gradient blocks). In fp32 this is exactly
// what model/gpt.cpp allocates for the step's options; the perfmodel tests compare it with the allocator's peak.
#pragma once

#include "axonn/perf/traffic_model.h"

#include <cstdint>

namespace axonn {

struct MemoryOptions {
    int weight_bytes = 4;                   // fp32 master weights
    int extra_weight_copy_bytes = 0;        // e.g. 2 for a bf16 copy of the weights used by the GEMMs
};

struct MemoryPrediction {
    std::int64_t weights, gradients, optimizer, activations, gathered_weights, buckets;
    std::int64_t total() const { return weights + gradients + optimizer + activations + gathered_weights + buckets; }
};

MemoryPrediction predict_memory(StepShape const& step, MemoryOptions const& options);

}  // namespace axonn
