#include "axonn/perf/memory_model.h"

#include "axonn/model/gpt.h"

namespace axonn {

MemoryPrediction predict_memory(StepShape const& step, MemoryOptions const& options) {
    GptMemory const allocated = gpt_memory(step.model, step.grid, step.local_batch(), step.seq, step.run);
    std::int64_t const parameters = allocated.parameter_bytes / 4;
    MemoryPrediction prediction{};
    prediction.weights = parameters * (options.weight_bytes + options.extra_weight_copy_bytes);
    prediction.gradients = parameters * 4;
    prediction.optimizer = parameters * 8;
    prediction.activations = allocated.activation_bytes * step.activation_bytes / 4;
    prediction.gathered_weights = allocated.workspace_bytes * step.activation_bytes / 4;
    prediction.buckets = 0;  // the data-parallel all-reduce runs in place on the gradient buffer
    return prediction;
}

}  // namespace axonn
