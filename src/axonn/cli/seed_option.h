// --seed, shared by `train`, `parity` and `generate`: an unsigned 64-bit integer.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace axonn {

// Registers --seed on `command`, into `target`. A negative value is refused by name (CLI11 would wrap -1 to
// 2^64 - 1, and its own range check prints the range of a double).
CLI::Option* add_seed_option(CLI::App& command, std::uint64_t& target, std::string const& description);

}  // namespace axonn
