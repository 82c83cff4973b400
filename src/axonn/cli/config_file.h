// TOML config files for subcommands. A file is a set of default arguments: each key is an option's long name
// without the dashes (`steps = 200`, `n-embd = 256`), and the arguments it stands for are placed before the
// user's own, so anything on the command line overrides the file (options keep their last value).
// Files are parsed as TOML (toml++), not by CLI11's reader, which ignores files given to a subcommand and does
// not implement TOML; errors name the file, line and column, and each value's type is checked against its option.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

// The command line with every `--config FILE` (or `--config=FILE`) replaced by the arguments FILE holds.
// Throws axonn::Error for a missing, unreadable or invalid file, a key that `command` has no option for, and a value
// of the wrong type.
std::vector<std::string> expand_config_files(CLI::App const& app, std::vector<std::string> arguments);

// Says in the --help of each command that takes --config without declaring it (every command but train, whose
// option lists it) how a config file is given: the option was in no --help but train's.
void describe_config_files(CLI::App& app);

}  // namespace axonn
