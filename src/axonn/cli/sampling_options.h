// --temperature, --top-k and --top-p, shared by `train` (its end-of-run sample) and `generate`.
#pragma once

#include "axonn/model/generate.h"

#include <CLI/CLI.hpp>

namespace axonn {

void add_sampling_options(CLI::App& command, SampleOptions& target);

}  // namespace axonn
