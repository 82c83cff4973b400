#include "axonn/train/train_step.h"

#include <cmath>

namespace axonn {

StepResult train_step(Gpt& model, AdamW& optimizer, Batch const& batch, float learning_rate) {
    float const loss = model.forward(batch);
    model.backward(GradWrite::overwrite);
    model.sync_gradients();
    double const norm = model.gradient_norm();
    if (!std::isfinite(loss) || !std::isfinite(norm)) return {loss, norm, false};
    optimizer.step(model.params(), model.grads(), norm, learning_rate);
    return {loss, norm, true};
}

}  // namespace axonn
