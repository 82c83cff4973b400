// The `axonn` subcommands. Each registers its options on the application and runs when chosen.
#pragma once

#include <CLI/CLI.hpp>

namespace axonn {

void add_train_command(CLI::App& app);
void add_prepare_command(CLI::App& app);
void add_corpus_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_parity_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);

}  // namespace axonn
