// The `axonn` subcommands. Each registers its options on the application and runs when chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <string_view>

namespace axonn {

void add_train_command(CLI::App& app);
void add_prepare_command(CLI::App& app);
void add_corpus_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_parity_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_memorization_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);

// For the commands that write files or print a result and use no grid (prepare, corpus, tokenize): a launch of
// several ranks would have them all write the same files or print the same result, so it is a usage error.
void require_one_process(std::string_view command);

// Whether this process is rank 0 of the job, the one that prints a command's result.
bool is_leader();

}  // namespace axonn
