// Empty values on the command line: `--out ""`, `--max-new-tokens ""` or `--resume=`, or an empty positional
// argument (every command's positional arguments are paths). Taken as given, commands read "" as "not given" (a run
// silently without its checkpoints), as their default (`tune --out ""` wrote into the source tree), as 0 (an unset
// shell variable in `--max-new-tokens "$N"` generated nothing, exit 0), as another value (`--resume=` was latest),
// or failed after their work with the system's words.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

// Throws axonn::UsageError naming the first empty value among `arguments` (the program's name, the command, then
// its arguments, config files expanded), but for an option whose empty value means something of its own
// (`memorization study --ablation-model ""`: no ablations).
void require_no_empty_values(CLI::App const& app, std::vector<std::string> const& arguments);

}  // namespace axonn
