// Empty paths on the command line: `--out ""` or `--out=` for an option that names a file or folder, or an empty
// positional argument (every command's positional arguments are paths). Taken as given, commands read "" as "not
// given" (a run silently without its checkpoints), as their default (`tune --out ""` wrote into the source tree), or
// failed after their work with the system's words.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

// Throws axonn::UsageError naming the first empty path among `arguments` (the program's name, the command, then
// its arguments, config files expanded).
void require_no_empty_paths(CLI::App const& app, std::vector<std::string> const& arguments);

}  // namespace axonn
