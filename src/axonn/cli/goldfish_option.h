// --goldfish k=K,h=H[,strategy=...], shared by `train`, `parity` and `memorization eval`.
#pragma once

#include "axonn/train/goldfish.h"

#include <CLI/CLI.hpp>

namespace axonn {

// Registers --goldfish on `command`; a given value is parsed into `target` (a bad one is a usage error).
CLI::Option* add_goldfish_option(CLI::App& command, GoldfishOptions& target);

}  // namespace axonn
