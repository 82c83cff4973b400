#include "axonn/cli/commands.h"
#include "axonn/cli/goldfish_option.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/sampling_options.h"
#include "axonn/cli/step_options.h"
#include "axonn/cli/seed_option.h"
#include "axonn/cli/tokenizer_dir_option.h"
#include "axonn/core/error.h"
#include "axonn/families/registry.h"
#include "axonn/io/tokenizer.h"
#include "axonn/io/utf8.h"
#include "axonn/train/grid_choice.h"
#include "axonn/train/stop_signals.h"
#include "axonn/train/trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

namespace axonn {
namespace {

// $AXONN_GEMM_RATE, which stands in for --gemm-rate (0 where unset: measure). A value that is no rate names the
// variable, which the user may not know is set.
double gemm_rate_from_environment() {
    char const* text = std::getenv("AXONN_GEMM_RATE");
    if (text == nullptr || *text == '\0') return 0.0;
    char* end = nullptr;
    double const rate = std::strtod(text, &end);
    if (*end != '\0' || !std::isfinite(rate) || rate < 0) {
        throw UsageError(fmt::format("AXONN_GEMM_RATE is '{}', not a GEMM rate in GFLOP/s: set it to one (0: "
                                     "measure), or unset it",
                                     text));
    }
    return rate;
}

}  // namespace

void add_train_command(CLI::App& app) {
    CLI::App* command =
        app.add_subcommand("train", fmt::format("Train a {} model on prepared token shards", family_labels()));
    command->footer(
        "Every option can also be set in a TOML file given with --config, by its long name without the dashes\n"
        "(for example `steps = 200` or `n-embd = 256`); options on the command line override the file.\n"
        "Example: axonn train --data data/austen --model gpt2-mini --steps 300 --metrics runs/metrics.jsonl");
    auto options = std::make_shared<TrainOptions>();
    auto model = std::make_shared<ModelOptions>(*command, "gpt2-tiny");
    command->add_option("--data", options->data, "folder written by `axonn prepare` (train.bin, val.bin), a shard, "
                                                 "or a folder of shards")->required();
    command->add_option("--val-data", options->val_data, "validation shard(s), or a folder: its val.bin; default: "
                        "the val.bin of --data when it is a folder (none for shards named alone)");
    command->add_option("--tokenizer", options->tokenizer,
                        "tokenizer the data was prepared with: gpt2, llama3, byte or a tokenizer.json folder")
        ->capture_default_str();
    add_tokenizer_dir_option(*command, options->tokenizer_dir, options->tokenizer);
    command->add_option("--steps", options->steps, "optimisation steps")->capture_default_str();
    command->add_option("--batch", options->batch, "sequences per batch (B)")->capture_default_str();
    command->add_option("--seq", options->seq, "tokens per sequence (T)")->capture_default_str();
    command->add_option("--lr", options->schedule.max_lr, "peak learning rate")->capture_default_str();
    command->add_option("--min-lr", options->schedule.min_lr, "learning rate at the end of the cosine decay")
        ->capture_default_str();
    command->add_option("--warmup", options->schedule.warmup_steps, "linear warm-up steps")->capture_default_str();
    command->add_option("--weight-decay", options->optimizer.weight_decay, "AdamW decoupled weight decay")
        ->capture_default_str();
    command->add_option("--grad-clip", options->optimizer.grad_clip, "maximum global gradient norm (0: no clipping)")
        ->capture_default_str();
    add_seed_option(*command, options->seed, "seed of the weight initialisation and the sample");
    command->add_option("--threads", options->threads, "OpenMP threads per rank (at most the machine's CPUs)")
        ->capture_default_str();
    command
        ->add_option("--gemm-rate", options->gemm_rate_gflops,
                     "MFU's denominator: one core's (or GPU's) GEMM rate in GFLOP/s, in the run's precision, instead "
                     "of the rate rank 0 measures at start (about half a second on a CPU); a fixed value also keeps "
                     "MFU comparable between runs on a machine whose speed drifts (an earlier run's banner gives one); "
                     "0, the default: measure it; $AXONN_GEMM_RATE stands in for it when it is not given");
    auto grid_spec = std::make_shared<std::string>("data=1,z=1,y=1,x=1");
    command->add_option("--grid", *grid_spec,
                        "process grid: data=D,z=Z,y=Y,x=X (product = number of MPI ranks); a grid file written by "
                        "`axonn tune` (its grid and order); or auto: the grid `axonn tune` measured for this job "
                        "(tuned-grid.json in the machine folder: configs/machines of axonn's source, or "
                        "$AXONN_MACHINES_DIR; a damaged one is an error, not passed by), else, where it holds none for "
                        "this job, the planner's choice with the local machine profile")
        ->capture_default_str();
    add_grid_order_option(*command, options->grid_order,
                          "rank order of the axes, fastest first (the fastest stays inside a node)");
    add_step_options(*command, options->run);
    add_backend_option(*command, options->run);
    command->add_flag("--debug-collectives", options->debug_collectives,
                      "check that all ranks of a group issue the same collectives; report the rank that diverged");
    command->add_option("--eval-every", options->eval_every, "validate every N steps (and at step 0 and the end)")
        ->capture_default_str();
    command->add_option("--eval-batches", options->eval_batches,
                        "validation batches per evaluation; 0: up to 8, as many as the validation data holds "
                        "(more than it holds is refused; a default val.bin that holds less than one batch leaves "
                        "the run without validation)")
        ->capture_default_str();
    command->add_option("--metrics", options->metrics, "write one JSON object per step to this file (an existing "
                                                       "file is refused unless --overwrite)");
    command->add_flag("--overwrite", options->overwrite, "replace an existing --metrics or --trace file");
    command->add_option("--trace", options->trace, "write a Chrome trace (Perfetto, chrome://tracing) of every rank: "
                        "steps, layers, kernels, collectives per axis and the waits");
    command->add_option("--trace-steps", options->trace_steps,
                        "steps the trace covers, from the first (of a resumed run: from the step it resumes at)")
        ->capture_default_str();
    command->add_option("--sample-tokens", options->sample.new_tokens, "tokens to generate at the end (0: none; at most "
                        + std::to_string(SampleOptions::max_new_tokens) + ")")->capture_default_str();
    add_sampling_options(*command, options->sample);
    command->add_option("--prompt", options->prompt, "text the sample continues");
    command->add_option("--ckpt-dir", options->ckpt_dir,
                        "keep checkpoints in this folder: one at the end, every --ckpt-every steps, and one on "
                        "SIGTERM, SIGUSR1, a first Ctrl-C or SIGHUP before stopping (exit status 75)");
    command->add_option("--ckpt-every", options->ckpt_every, "also save a checkpoint every N steps (0: only at the "
                        "end)")->capture_default_str();
    command->add_option("--keep", options->keep, "keep the newest K complete checkpoints (0: all)")
        ->capture_default_str();
    command->add_flag("--ckpt-async", options->ckpt_async,
                      "write the --ckpt-every checkpoints in the background while training goes on: the state is "
                      "copied into memory at the step (one more copy of this rank's share of the weights and AdamW "
                      "state) and the files written by a thread; the final and a signal's save still wait");
    command->add_option("--ckpt-file-size", options->ckpt_file_mib, "largest checkpoint file a rank writes, MiB")
        ->capture_default_str();
    command->add_option("--resume", options->resume,
                        "continue a run bit for bit from a checkpoint: latest (the newest in --ckpt-dir), a "
                        "checkpoint folder, or a folder of them; on any grid")
        ->expected(0, 1)
        ->default_str("latest")  // the value of a bare --resume
        ->option_text("[latest|DIR]");
    command->add_flag("--new-data", options->new_data,
                      "with --resume: go on from the checkpoint's weights and optimizer on other --data, read from "
                      "its start (without it, a checkpoint trained on other data is refused; on its own data it "
                      "changes nothing, and says so)");
    command->add_option("--init-from", options->init_from,
                        fmt::format("start from these weights with a fresh optimizer: an axonn checkpoint (or folder "
                                    "of them) or a Hugging Face {} folder (config.json + model.safetensors); the "
                                    "model comes from it", family_labels()));

    CLI::Option* goldfish = add_goldfish_option(*command, options->goldfish);
    goldfish->description(goldfish->get_description() + "; --metrics then also logs loss_all, loss_kept and "
                          "loss_dropped (loss is loss_kept)");

    command->callback([command, options, model, grid_spec] {
        // Read by expand_config_files before parsing, which passes the files on: a run's outputs may not be one.
        options->read_files = config_files(*command);
        if (command->count("--gemm-rate") == 0) options->gemm_rate_gflops = gemm_rate_from_environment();
        // Only a run that saves acts on a stop signal; without a --ckpt-dir one ends it, as for other commands.
        if (options->ckpt_dir.empty()) end_process_on_stop_signals();
        as_usage_errors([&] {
            AXONN_REQUIRE(!options->new_data || !options->resume.empty(),
                          "--new-data goes with --resume: a new run reads its data from the start anyway");
            AXONN_REQUIRE(options->resume != "latest" || !options->ckpt_dir.empty(),
                          "--resume latest looks in --ckpt-dir: pass --ckpt-dir DIR, or --resume PATH");
            require_utf8_text(options->prompt, "--prompt", "write the prompt in UTF-8");
            options->prompt_given = command->count("--prompt") > 0;
            options->model = model->resolve_model();
            options->model_preset_given = model->preset_given();
            options->model_overrides = model->overrides();
            options->grid_auto = *grid_spec == "auto";
            if (!options->grid_auto && !names_grid_file(*grid_spec)) options->grid = GridShape::parse(*grid_spec);
            std::error_code error;
            AXONN_REQUIRE(
                !names_grid_file(*grid_spec) || std::filesystem::exists(*grid_spec, error),
                "--grid {} is neither a grid (data=D,z=Z,y=Y,x=X), auto, nor an existing grid file from `axonn "
                "tune`",
                *grid_spec);
        });
        if (!options->grid_auto && names_grid_file(*grid_spec)) {  // a missing or damaged file is a file error
            GridFile const file = read_grid_file(*grid_spec);
            options->read_files.emplace_back(*grid_spec);
            options->grid = file.grid;
            if (command->count("--grid-order") == 0) options->grid_order = file.grid_order;
            // The job it was tuned for, so that a file of another job is seen for what it is.
            options->grid_source = fmt::format("from {}, tuned by `axonn tune` for {} at batch {} x {} tokens{}",
                                               *grid_spec, file.job.model, file.job.batch, file.job.seq,
                                               file.step_s > 0 ? fmt::format(" ({:.4f} s a step)", file.step_s) : "");
        }
        if (options->tokenizer_dir.empty()) options->tokenizer_dir = default_gpt2_dir();
        options->sample.seed = options->seed;
        run_training(*options);
    });
}

}  // namespace axonn
