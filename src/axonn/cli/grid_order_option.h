// --grid-order, shared by every command that builds a process grid: the rank order of the grid's axes.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace axonn {

// Registers --grid-order on `command`, into `target`, checked as the command line is read: a bad order is a bad
// command line (exit 2) in every command alike, not an error of the run found when its grid is built.
CLI::Option* add_grid_order_option(CLI::App& command, std::string& target,
                                   std::string const& description = "rank order of the axes, fastest first");

}  // namespace axonn
