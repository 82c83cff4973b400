// Finding a command's subcommand by name, for the checks that read the command line before CLI11 does (config files,
// empty values) and for messages that name a subcommand's help.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace axonn {

// The subcommand of `command` named `name`, or null.
CLI::App const* subcommand_named(CLI::App const& command, std::string const& name);

}  // namespace axonn
