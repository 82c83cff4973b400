// The options that say how a training step runs on the grid, shared by `train`, `bench`, `parity` and `plan`
// (so that the planner predicts what the trainer does): --overlap on|off, --recompute none|layer,
// --cache-weights, --precision fp32|bf16, --micro-batch M.
#pragma once

#include "axonn/train/train_step.h"

#include <CLI/CLI.hpp>

namespace axonn {

void add_step_options(CLI::App& command, StepOptions& options);
// --backend cpu|cuda, for the commands that run steps on this machine (train, bench).
void add_backend_option(CLI::App& command, StepOptions& options);

}  // namespace axonn
