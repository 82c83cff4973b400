// One optimisation step, shared by `axonn train`, `axonn bench` and the tests: forward, backward (overwriting
// the previous step's gradients), gradient sync over the grid, global-norm clipping and the AdamW update. A step
// whose loss or gradient norm is not finite changes no weight, so the caller can stop on weights that are still
// finite.
#pragma once

#include "axonn/model/gpt.h"
#include "axonn/train/optimizer.h"

namespace axonn {

struct StepResult {
    float loss;
    double grad_norm;  // before clipping
    bool updated;      // false when the loss or the norm is not finite: the weights are then left as they were
};

StepResult train_step(Gpt& model, AdamW& optimizer, Batch const& batch, float learning_rate);

}  // namespace axonn
