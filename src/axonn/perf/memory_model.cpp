#include "axonn/perf/memory_model.h"

#include "axonn/model/decoder.h"

namespace axonn {

MemoryPrediction predict_memory(StepShape const& step) {
    DecoderMemory const allocated = decoder_memory(step.decoder(), step.grid, step.local_batch(), step.seq, step.run);
    MemoryPrediction prediction{};
    prediction.weights = allocated.parameter_bytes;
    prediction.gradients = allocated.gradient_bytes;
    prediction.optimizer = allocated.optimizer_bytes;
    prediction.activations = allocated.activation_bytes;
    prediction.gathered_weights = allocated.workspace_bytes;
    prediction.buckets = 0;  // the data-parallel all-reduce runs in place on the gradient buffer
    return prediction;
}

}  // namespace axonn
