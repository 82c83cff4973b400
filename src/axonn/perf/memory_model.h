// Predicted bytes per rank of a training step: weights (fp32 masters, and their bf16 copy in mixed precision),
// gradients, AdamW's moments, activations (all layers', or each layer's input and one layer's rest when
// recomputing), the gathered-weight and weight-gradient buffers of the Z split (two blocks, or every block when
// caching, and a ring of gradient blocks) and the bf16 copies of GEMM operands. This is exactly what
// model/gpt.cpp allocates for the step's options; the perfmodel tests compare it with the allocator's peak.
#pragma once

#include "axonn/perf/traffic_model.h"

#include <cstdint>

namespace axonn {

struct MemoryPrediction {
    std::int64_t weights, gradients, optimizer, activations, gathered_weights, buckets;
    std::int64_t total() const { return weights + gradients + optimizer + activations + gathered_weights + buckets; }
};

MemoryPrediction predict_memory(StepShape const& step);

}  // namespace axonn
