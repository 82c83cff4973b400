// The values on the command line, checked before CLI11 reads them.
// - Empty values: `--out ""`, `--max-new-tokens ""` or `--resume=`, or an empty positional argument (every
//   command's positional arguments are paths). Taken as given, commands read "" as "not given" (a run silently
//   without its checkpoints), as their default (`tune --out ""` wrote into the source tree), as 0 (an unset shell
//   variable in `--max-new-tokens "$N"` generated nothing, exit 0), as another value (`--resume=` was latest), or
//   failed after their work with the system's words.
// - Whole numbers: CLI11 reads an integer option's value as C's strtoll does with base 0, so `--steps 010` trained 8
//   steps (octal), `0x10` was 16, and `abc` got CLI11's bare "Could not convert". A whole number is written in
//   decimal digits, with a sign at most, and no leading zero.
// - Real numbers: CLI11 reads them as strtod does, so `--val-fraction 0x1p-4` was 0.0625 and `" 0.1"` (a space
//   from a quoted shell variable) was 0.1. A real number is written in decimal, as 0.5, .5 or 6e-4.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

// Throws axonn::UsageError naming the first value among `arguments` (the program's name, the command, then its
// arguments, config files expanded) that is empty, but for an option whose empty value means something of its own
// (`memorization study --ablation-model ""`: no ablations; `generate --prompt ""`: from the end-of-text token), or
// that an integer option takes and is not a whole number in decimal, or a real option takes and is not a number in
// decimal.
void require_checked_values(CLI::App const& app, std::vector<std::string> const& arguments);

// Whether `option` ("--prompt") takes an empty value as one of its values (see require_checked_values).
bool value_may_be_empty(std::string_view option);

// `arguments` with each `--option=` that gives an empty value written as two arguments, `--option ""`: CLI11 reads
// `--prompt=` as the option without its value and takes the next argument as the value (`generate --prompt=
// --greedy` prompted with "--greedy" and sampled).
std::vector<std::string> empty_values_apart(std::vector<std::string> arguments);

}  // namespace axonn
