// Finding a command's subcommand by name, for the checks that read the command line before CLI11 does (config files,
// empty values) and for messages that name a subcommand's help.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace axonn {

// The subcommand of `command` named `name`, or null.
CLI::App const* subcommand_named(CLI::App const& command, std::string const& name);

// The command a command line names: arguments[1], or its subcommand arguments[2] where it has one of that name.
struct NamedCommand {
    CLI::App const* command;     // null where arguments[1] names no command
    std::string name;            // "train", "memorization eval": whose --help to read
    std::size_t first_argument;  // the index of the command's first own argument
};
NamedCommand named_command(CLI::App const& app, std::vector<std::string> const& arguments);

}  // namespace axonn
