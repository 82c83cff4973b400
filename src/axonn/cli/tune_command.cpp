// `axonn tune`: time the planner's best grids for a job on this allocation and keep the fastest (train/tune.h).
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/step_options.h"
#include "axonn/cli/tokenizer_dir_option.h"
#include "axonn/core/error.h"
#include "axonn/io/tokenizer.h"
#include "axonn/train/tune.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace axonn {

void add_tune_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("tune", "Time the planner's best grids for a job and keep the fastest");
    command->footer(
        "Run it under mpirun or srun on the allocation the job will run on, with the job's model, batch,\n"
        "sequence length and step options. The performance model ranks every grid of the ranks on this\n"
        "machine's profile (local.toml in the machine folder: configs/machines of axonn's source, or\n"
        "$AXONN_MACHINES_DIR; without one, a quick calibration now); the --top best are each\n"
        "trained for 10 steps on random tokens, the mean of the last 8 timed (the slowest rank's), and the\n"
        "fastest is written to --out. `axonn train --grid FILE` runs that grid; `axonn train --grid auto` uses\n"
        "tuned-grid.json in the machine folder when it was measured for the same model, batch, sequence length\n"
        "and number of ranks. Example:\n"
        "  mpirun -np 4 axonn tune --model gpt2-tiny --tokenizer byte --batch 8 --seq 64 --top 3\n"
        "  mpirun -np 4 axonn train --model gpt2-tiny --tokenizer byte --batch 8 --seq 64 --grid auto --data ...");
    auto options = std::make_shared<TuneOptions>();
    auto model = std::make_shared<ModelOptions>(*command, "gpt2-small");
    auto tokenizer = std::make_shared<std::string>("gpt2");
    auto tokenizer_dir = std::make_shared<std::filesystem::path>();
    auto json = std::make_shared<bool>(false);
    BenchOptions& bench = options->bench;
    command->add_option("--tokenizer", *tokenizer,
                        "the tokenizer the job trains with, which decides the vocabulary: gpt2, llama3, byte or a "
                        "tokenizer.json folder")
        ->capture_default_str();
    add_tokenizer_dir_option(*command, *tokenizer_dir, *tokenizer);
    command->add_option("--batch", bench.batch, "global batch, sequences (B)")->capture_default_str();
    command->add_option("--seq", bench.seq, "tokens per sequence (T)")->capture_default_str();
    command->add_option("--threads", bench.threads, "OpenMP threads per rank")->capture_default_str();
    add_grid_order_option(*command, bench.grid_order);
    add_step_options(*command, bench.run);
    command->add_option("--top", options->top, "how many of the planner's best grids to time")->capture_default_str();
    command->add_option("--out", options->out,
                        "the grid file to write (default: tuned-grid.json in the machine folder)");
    command->add_flag("--overwrite", options->overwrite,
                      "replace the file at --out, whatever it holds (but a model or data)");
    command->add_flag("--json", *json, "print the grids timed as one JSON object");
    command->callback([command, options, model, tokenizer, tokenizer_dir, json] {
        require_apart_from_config_files(options->grid_file(), "--out", *command);
        BenchOptions& bench = options->bench;
        as_usage_errors([&] { bench.model = model->resolve_model(); });
        bench.model.set_vocab_size(
            make_tokenizer(*tokenizer, tokenizer_dir->empty() ? default_gpt2_dir() : *tokenizer_dir)->vocab_size());
        TuneResult const result = run_tune(*options);
        if (!is_leader()) return;
        if (*json) {
            nlohmann::json grids = nlohmann::json::array();
            for (TunedGrid const& g : result.grids) {
                grids.push_back({{"grid", g.grid.to_string()}, {"predicted_s", g.predicted_s},
                                 {"measured_s", g.measured_s}});
            }
            fmt::print("{}\n", nlohmann::json{{"grids", grids},
                                              {"fastest", result.grids[result.fastest].grid.to_string()},
                                              {"machine", result.profile_source},
                                              {"written", result.written.string()}}
                                   .dump());
            return;
        }
        fmt::print("{:<4} {:<22} {:>13} {:>13}\n", "plan", "grid", "predicted s", "measured s");
        for (std::size_t k = 0; k < result.grids.size(); ++k) {
            TunedGrid const& g = result.grids[k];
            fmt::print("{:<4} {:<22} {:>13.4f} {:>13.4f}{}\n", k + 1, g.grid.to_string(), g.predicted_s,
                       g.measured_s, k == result.fastest ? "  <- fastest" : "");
        }
        fmt::print("ranked on the machine profile {}; wrote {}\n", result.profile_source, result.written.string());
    });
}

}  // namespace axonn
