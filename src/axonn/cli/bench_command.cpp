#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/step_options.h"
#include "axonn/core/error.h"
#include "axonn/train/benchmark.h"

#include <fmt/format.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>

namespace axonn {
namespace {

// A tuned way's FLOP/s, or null for a way that was not a candidate for its shape (never timed).
nlohmann::json rate(double flops, double seconds) {
    return seconds > 0 ? nlohmann::json(flops / seconds) : nlohmann::json();
}

nlohmann::json breakdown_json(StepBreakdown const& b) {
    return {{"steps", b.steps},
            {"step_s", b.step_s},
            {"gemm_s", b.gemm_s},
            {"attention_s", b.attention_s},
            {"norm_s", b.norm_s},
            {"elementwise_s", b.elementwise_s},
            {"optimizer_s", b.optimizer_s},
            {"comm_exposed_s", b.comm_exposed_s},
            {"rest_s", b.rest_s},
            {"kernel_s", b.kernel_s}};
}

// "GEMMs 0.512 s (81%), attention ...": each part of a step with its share.
std::string breakdown_text(StepBreakdown const& b) {
    std::string text;
    for (auto const& [name, seconds] : {std::pair{"GEMMs", b.gemm_s},
                                        {"attention", b.attention_s},
                                        {"norms", b.norm_s},
                                        {"element-wise", b.elementwise_s},
                                        {"optimizer", b.optimizer_s},
                                        {"exposed communication", b.comm_exposed_s},
                                        {"the rest", b.rest_s}}) {
        text += fmt::format("{}{} {:.4f} s ({:.1f}%)", text.empty() ? "" : ", ", name, seconds,
                            b.step_s > 0 ? 100 * seconds / b.step_s : 0.0);
    }
    return text;
}

}  // namespace

void add_bench_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("bench", "Time training steps: tokens/s, model FLOP/s and MFU");
    command->footer(
        "Runs --iters steps on random tokens and averages all but the first two (AxoNN's method); a\n"
        "step lasts as long as its slowest rank, and the fastest and slowest timed steps are printed\n"
        "beside the mean (--json: fastest_step_s, slowest_step_s) to show how much the machine drifts.\n"
        "MFU = (6·N + 6·L·C·T) · tokens/s ÷ (the single-core GEMM rate measured in the run's precision\n"
        "× threads × ranks): bf16's MFU is against the bf16 GEMM rate.\n"
        "Each timed step's kernels are timed (the trace's spans), and rank 0's step is broken down into\n"
        "GEMMs, attention, norms, element-wise kernels (activations, residuals, the embedding, the\n"
        "cross-entropy, conversions), the optimizer (AdamW, the gradient norm), exposed communication\n"
        "and the rest (--json: breakdown, with each kernel's time in breakdown.kernel_s). On a GPU each\n"
        "kernel timed is waited for at both ends, which slows the step, so the timed steps are not\n"
        "broken down there: as many steps after them are (breakdown.step_s is theirs, and\n"
        "breakdown.after_the_timed_steps says so).");
    auto options = std::make_shared<BenchOptions>();
    auto model = std::make_shared<ModelOptions>(*command, "gpt2-small");
    auto json = std::make_shared<bool>(false);
    auto vocab = std::make_shared<int>(0);
    command->add_option("--vocab", *vocab, "vocabulary size (0: the preset's, such as GPT-2's 50,257)")
        ->capture_default_str();
    command->add_option("--batch", options->batch, "sequences per batch (B)")->capture_default_str();
    command->add_option("--seq", options->seq, "tokens per sequence (T)")->capture_default_str();
    command->add_option("--iters", options->iterations, "iterations; the first two are not timed")
        ->capture_default_str();
    command->add_option("--threads", options->threads, "OpenMP threads")->capture_default_str();
    auto grid_spec = std::make_shared<std::string>("data=1,z=1,y=1,x=1");
    command->add_option("--grid", *grid_spec, "process grid: data=D,z=Z,y=Y,x=X (product = number of MPI ranks)")
        ->capture_default_str();
    add_grid_order_option(*command, options->grid_order);
    add_step_options(*command, options->run);
    add_backend_option(*command, options->run);
    command->add_option("--trace", options->trace, "write a Chrome trace of every rank's timed iterations");
    command->add_flag("--overwrite", options->overwrite, "replace an existing --trace file")->needs("--trace");
    command->add_flag("--json", *json, "print one JSON object instead of text");

    command->callback([command, options, model, json, grid_spec, vocab] {
        if (!options->trace.empty()) require_apart_from_config_files(options->trace, "--trace", *command);
        as_usage_errors([&] {
            options->model = model->resolve_model();
            if (*vocab != 0) options->model.set_vocab_size(*vocab);
            options->model.validate();
            options->grid = GridShape::parse(*grid_spec);
        });
        BenchResult const result = run_benchmark(*options);
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank != 0) return;
        if (*json) {
            nlohmann::json const record = {{"model", options->model.name()},
                                           {"batch", options->batch},
                                           {"seq", options->seq},
                                           {"threads", options->threads},
                                           {"backend", options->run.backend},
                                           {"precision", precision_name(result.precision)},
                                           {"iterations", options->iterations},
                                           {"step_s", result.step_s},
                                           {"fastest_step_s", result.fastest_step_s},
                                           {"slowest_step_s", result.slowest_step_s},
                                           {"tokens_per_s", result.tokens_per_s},
                                           {"model_flops_per_s", result.model_flops_per_s},
                                           {"gemm_flops_per_s", result.gemm_flops_per_s},
                                           {"mfu", result.mfu},
                                           {"comm_s", result.comm_s},
                                           {"comm_exposed_s", result.comm_exposed_s},
                                           {"comm_hidden_fraction", result.comm_hidden_fraction},
                                           {"grid", options->grid.to_string()},
                                           {"overlap", options->run.model.overlap},
                                           {"micro_batch", options->run.micro_batch},
                                           {"recompute", options->run.model.recompute == Recompute::layer},
                                           {"logit_rows", options->run.model.logit_rows},
                                           {"vocab_split", vocab_split_name(result.vocab_split)},
                                           {"peak_rss_bytes", result.peak_rss_bytes},
                                           {"tensor_peak_bytes", result.tensor_peak_bytes}};
            nlohmann::json tunings = nlohmann::json::array();
            for (GemmTuningReport const& tuning : result.gemm_tunings) {
                tunings.push_back({{"gemm", tuning.gemm},
                                   {"whole_flops_per_s", tuning.flops / tuning.whole_s},
                                   {"chunked_flops_per_s", rate(tuning.flops, tuning.chunks_s)},
                                   {"padded_flops_per_s", rate(tuning.flops, tuning.padded_s)},
                                   {"halves_flops_per_s", rate(tuning.flops, tuning.halves_s)},
                                   {"chosen", tuning.chosen}});
            }
            nlohmann::json full = record;
            full["gemm_tuning"] = tunings;
            full["breakdown"] = breakdown_json(result.breakdown);
            full["breakdown"]["after_the_timed_steps"] = result.breakdown_steps_apart;
            fmt::print("{}\n", full.dump());
            return;
        }
        fmt::print(
            "{} B={} T={} threads={} {}: {:.3f} s/step ({:.3f}-{:.3f}), {:.1f} tokens/s, {:.1f} model GFLOP/s, "
            "MFU {:.1f}% (GEMM peak {:.1f} GFLOP/s), peak memory {:.0f} MiB\n",
            options->model.name(), options->batch, options->seq, options->threads, precision_name(result.precision),
            result.step_s, result.fastest_step_s, result.slowest_step_s, result.tokens_per_s,
            result.model_flops_per_s / 1e9, 100 * result.mfu, result.gemm_flops_per_s / 1e9,
            result.peak_rss_bytes / 1048576.0);
        fmt::print("per step (rank 0, {} {} steps): {}\n", result.breakdown.steps,
                   result.breakdown_steps_apart ? "more, each kernel waited for," : "timed",
                   breakdown_text(result.breakdown));
        if (result.comm_s > 0) {
            fmt::print("communication per step (rank 0): {:.3f} s, {:.3f} s of it exposed ({:.0f}% hidden)\n",
                       result.comm_s, result.comm_exposed_s, 100 * result.comm_hidden_fraction);
        }
    });
}

}  // namespace axonn
