#include "axonn/cli/commands.h"
#include "axonn/cli/goldfish_option.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/step_options.h"
#include "axonn/cli/seed_option.h"
#include "axonn/core/error.h"
#include "axonn/train/parity.h"

#include <fmt/format.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace axonn {

void add_parity_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("parity", "Prove a grid gives the serial answer: run both, compare");
    command->footer("Runs --steps AdamW steps serially and on --grid from the same seed and batches, and prints the\n"
                    "largest relative differences of the loss, the gradient norm, the first step's logits and each\n"
                    "gradient tensor. Example: mpirun -np 8 build/axonn parity --grid data=2,z=1,y=2,x=2 --json");
    auto options = std::make_shared<ParityOptions>();
    auto model = std::make_shared<ModelOptions>(*command, "gpt2-micro");
    auto vocab = std::make_shared<int>(300);
    auto grid_spec = std::make_shared<std::string>("data=1,z=1,y=1,x=1");
    auto json = std::make_shared<bool>(false);
    command->add_option("--vocab", *vocab, "vocabulary size (padded to a multiple of 64)")->capture_default_str();
    command->add_option("--grid", *grid_spec, "process grid: data=D,z=Z,y=Y,x=X (product = number of MPI ranks)")
        ->capture_default_str();
    add_grid_order_option(*command, options->grid_order);
    command->add_option("--steps", options->steps, "AdamW steps")->capture_default_str();
    command->add_option("--batch", options->batch, "global batch (sequences)")->capture_default_str();
    command->add_option("--seq", options->seq, "tokens per sequence")->capture_default_str();
    add_seed_option(*command, options->seed, "seed of the weights");
    command->add_flag("--debug-collectives", options->debug_collectives, "check every collective's signature");
    add_step_options(*command, options->run);
    add_goldfish_option(*command, options->goldfish);
    command->add_flag("--json", *json, "print one JSON object: max_rel_diff and the per-quantity values");

    command->callback([options, model, vocab, grid_spec, json] {
        as_usage_errors([&] {
            options->model = model->resolve_model();
            options->model.set_vocab_size(*vocab);
            options->model.validate();
            options->grid = GridShape::parse(*grid_spec);
            require_goldfish_drops_targets(options->goldfish, options->seq, fmt::format("--seq {}", options->seq));
        });
        ParityReport const report = run_parity(*options);
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank != 0) return;
        if (*json) {
            nlohmann::json record = {{"grid", options->grid.to_string()},
                                           {"steps", options->steps},
                                           {"max_rel_diff", report.max_rel_diff()},
                                           {"loss_rel_diff", report.loss_rel_diff},
                                           {"grad_norm_rel_diff", report.grad_norm_rel_diff},
                                           {"logits_rel_diff", report.logits_rel_diff},
                                           {"logits_in_chunks", report.logits_in_chunks},
                                           {"init_max_abs_diff", report.init_max_abs_diff},
                                           {"grad_rel_diff", report.grad_rel_diff}};
            if (options->goldfish.enabled()) {
                record["masked_loss_rel_diff"] = report.masked_loss_rel_diff;
                record["masks_equal"] = report.masks_equal;
            }
            fmt::print("{}\n", record.dump());
            return;
        }
        fmt::print("parity of grid {} against serial, {} step(s), model {}:\n", options->grid.to_string(),
                   options->steps, options->model.name());
        fmt::print("  initial weights, gathered: max |diff| {:.3e}{}\n", report.init_max_abs_diff,
                   report.init_max_abs_diff == 0 ? " (bit-identical)" : "");
        fmt::print("  {} {:.3e}\n", report.logits_in_chunks ? "token losses (step 0; logits in chunks, not held)"
                                                             : "logits (step 0)  ", report.logits_rel_diff);
        fmt::print("  loss, worst step  {:.3e}\n", *std::max_element(report.loss_rel_diff.begin(), report.loss_rel_diff.end()));
        fmt::print("  grad norm, worst  {:.3e}\n",
                   *std::max_element(report.grad_norm_rel_diff.begin(), report.grad_norm_rel_diff.end()));
        for (auto const& [name, difference] : report.grad_rel_diff) {
            fmt::print("  grad {:<9} {:.3e}\n", name, difference);
        }
        if (options->goldfish.enabled()) {
            fmt::print("  Goldfish {}: masks of every rank's own rows {} the serial mask; all/kept/dropped "
                       "losses, worst step {:.3e}\n", options->goldfish.describe(),
                       report.masks_equal ? "equal" : "DIFFER FROM",
                       *std::max_element(report.masked_loss_rel_diff.begin(), report.masked_loss_rel_diff.end()));
        }
        fmt::print("max_rel_diff {:.3e}\n", report.max_rel_diff());
    });
}

}  // namespace axonn
