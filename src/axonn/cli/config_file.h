// TOML config files for subcommands. A file is a set of default arguments: each key is an option's long name
// without the dashes (`steps = 200`, `n-embd = 256`), and the arguments it stands for are placed before the
// user's own, so anything on the command line overrides the file (options keep their last value).
// Files are parsed as TOML (toml++), not by CLI11's reader, which ignores files given to a subcommand and does
// not implement TOML; errors name the file, line and column, and each value's type is checked against its option.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// The command line with every `--config FILE` (or `--config=FILE`) replaced by the arguments FILE holds.
// Throws axonn::Error for a missing, unreadable or invalid file, a key that `command` has no option for, and a value
// of the wrong type.
std::vector<std::string> expand_config_files(CLI::App const& app, std::vector<std::string> arguments);

// Gives --config FILE (repeatable) to every command of `app`, once all are added: expand_config_files passes the
// files read on to it (config_files reads them back), and its --help lists it.
void add_config_options(CLI::App& app);

// The config files `command` read (its --config values).
std::vector<std::filesystem::path> config_files(CLI::App const& command);

// Refuses an output of `command` (a file, or a folder it writes into; `option` names it) that is one of the command's
// config files or holds one: `calibrate --config p.toml --out p.toml --overwrite` replaced the file it read.
void require_apart_from_config_files(std::filesystem::path const& output, std::string_view option,
                                     CLI::App const& command);

}  // namespace axonn
