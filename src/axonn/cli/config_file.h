// TOML config files for subcommands. A file is a set of default arguments: each key is an option's long name
// without the dashes (`steps = 200`, `n-embd = 256`), and the arguments it stands for are placed before the
// user's own, so anything on the command line overrides the file (options keep their last value).
// CLI11's own config support is not used because, in the Debian version, it ignores files given to a
// subcommand; this also lets an unknown key fail with a message that names the file.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

// The command line with every `--config FILE` (or `--config=FILE`) replaced by the arguments FILE holds.
// Throws axonn::Error for a missing or unparsable file and for a key that `command` has no option for.
std::vector<std::string> expand_config_files(CLI::App const& app, std::vector<std::string> arguments);

}  // namespace axonn
