// The parity run (train/parity.h) the MPI suites compare every grid with: a model on a grid for some steps, on the
// suites' batch (support/micro_model.h).
#pragma once

#include "axonn/train/parity.h"
#include "support/micro_model.h"

namespace axonn::testing {

inline ParityOptions suite_parity(ModelConfig const& model, GridShape const& grid, int steps) {
    ParityOptions options;
    options.model = model;
    options.grid = grid;
    options.steps = steps;
    options.batch = suite_batch();
    return options;
}

}  // namespace axonn::testing
