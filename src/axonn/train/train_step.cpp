#include "axonn/train/train_step.h"

namespace axonn {

StepResult train_step(Gpt& model, AdamW& optimizer, Batch const& batch, float learning_rate) {
    model.zero_grad();
    float const loss = model.forward(batch);
    model.backward();
    double const norm = optimizer.gradient_norm(model.grads());
    optimizer.step(model.params(), model.grads(), norm, learning_rate);
    return {loss, norm};
}

}  // namespace axonn
