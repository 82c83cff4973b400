#include "axonn/train/training_report.h"

#include "axonn/core/file_io.h"
#include "axonn/train/checkpointing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

namespace axonn {
namespace {

// " | gradients communicated in bf16" for the banner, as --grad-comm set it; nothing for fp32.
std::string grad_comm_text(DecoderOptions const& model) {
    if (model.grad_sum_comm == DType::bf16) return " | gradients communicated in bf16";
    if (model.grad_scatter_comm == DType::bf16) return " | gradients reduce-scattered in bf16, summed in fp32";
    return "";
}

// "on", and whether a helper thread progresses the overlapped collectives (comm/progress.h).
std::string overlap_text(DecoderOptions const& model, ProcessGrid& grid) {
    if (!model.overlap) return "off";
    return grid.progress().threaded() ? "on" : "on, progressed in waits (more ranks than CPUs on a node)";
}

void print_model(TrainOptions const& options, Decoder const& model) {
    DecoderMemory const memory = model.memory();
    fmt::print("axonn train | model {}\n", options.model.summary());
    fmt::print("  parameters {:.2f} M | memory per rank {} (weights {}, grads {}, AdamW {}, activations {})\n",
               options.model.parameter_count() / 1e6, human_bytes(memory.total()), human_bytes(memory.parameter_bytes),
               human_bytes(memory.gradient_bytes), human_bytes(memory.optimizer_bytes),
               human_bytes(memory.activation_bytes));
}

void print_grid(TrainOptions const& options, Decoder const& model, ProcessGrid& grid, NodePlacement const& placement) {
    DecoderOptions const& run = options.run.model;
    int const passes = options.batch / grid.shape().batch_replicas() / model.max_batch();
    std::int64_t const pass_rows = static_cast<std::int64_t>(model.max_batch()) * options.seq;
    fmt::print(
        "  grid {}{} over {} rank(s) (order {}) | threads {} per rank | overlap {} | {} pass(es) of {} "
        "sequence(s) per step | vocabulary over {}{}{}{}{}\n",
        grid.shape().to_string(), options.grid_source.empty() ? "" : " (" + options.grid_source + ")",
        grid.world_size(), options.grid_order, options.threads, overlap_text(run, grid), passes, model.max_batch(),
        vocab_split_name(model.architecture().vocab_split),
        run.recompute == Recompute::layer ? " | layers recomputed" : "", run.cache_weights ? " | weights cached" : "",
        grad_comm_text(run),
        logit_chunks(pass_rows, run.logit_rows) > 1 ? fmt::format(" | LM head in chunks of {} rows", run.logit_rows)
                                                    : std::string());
    fmt::print("  placement {}\n", placement_summary(placement));
}

void print_backend(TrainOptions const& options, Backend const& backend, GemmRateMeasurement const& rate) {
    std::string const source = options.gemm_rate_gflops > 0 ? "| --gemm-rate:" : "on " + rate.hardware + " | measured";
    fmt::print("  backend {} {} {} {} GEMM {:.1f} GFLOP/s (MFU denominator: this x {}ranks)\n",
               backend.name(), source, rate.per_core ? "single-core" : "device",
               precision_name(options.run.model.precision), rate.flops_per_s / 1e9, rate.per_core ? "threads x " : "");
}

void print_data(TrainOptions const& options, TrainingData const& data, Tokenizer const& tokenizer) {
    fmt::print("  data {} tokens in {} shard(s), tokenizer {} | batch {} x {} tokens, {} steps, lr {:g}\n",
               data.train.total_tokens(), data.train.shard_count(), tokenizer.name(), options.batch, options.seq,
               options.steps, options.schedule.max_lr);
    // Warm-up climbs to --lr over its steps: a longer one than the run never gets there, which nothing said.
    if (options.schedule.warmup_steps > options.steps) {
        fmt::print("  --warmup {} is longer than the run's {} steps: the learning rate climbs throughout and never "
                   "reaches --lr {:g}\n",
                   options.schedule.warmup_steps, options.steps, options.schedule.max_lr);
    }
    // Not refused: a config file's prompt (the demo's) is overridden by a command line's --sample-tokens 0.
    if (options.prompt_given && options.sample.new_tokens == 0) {
        fmt::print("  --prompt is not used: --sample-tokens 0 draws no sample at the end\n");
    }
    if (data.train.has_loss_mask()) {
        fmt::print("  loss mask: {} of the {} training tokens count as targets (responses, not prompts){}\n",
                   data.train.loss_tokens(), data.train.total_tokens(),
                   data.val && data.val->has_loss_mask() ? "; validation is masked alike" : "");
    }
    if (!data.training_note.empty()) fmt::print("  {}\n", data.training_note);
    if (!data.val) fmt::print("  {}\n", data.no_validation_note);
    if (options.goldfish.enabled()) {
        bool const hash = options.goldfish.strategy == GoldfishStrategy::hash;
        fmt::print("  Goldfish loss {}: about {:.1f}% of the training targets leave the loss{}; validation has no "
                   "Goldfish mask\n",
                   options.goldfish.describe(), 100 * goldfish_drop_fraction(options.goldfish, options.seq),
                   hash ? " where the data's h-grams differ (the share dropped is measured: goldfish_dropped in "
                          "--metrics, and at the end)"
                        : "");
    }
}

// Where the weights come from: a resumed checkpoint (and the settings this run changes), --init-from, or the RNG.
void print_start(TrainOptions const& options, BannerFacts const& facts) {
    if (facts.resumed) {
        fmt::print("  resuming from {} at step {} (verified and read in {:.2f} s)\n", facts.resumed->folder().string(),
                   facts.start_step, facts.restore_seconds);
        std::vector<std::string> const changed = settings_changed_since(*facts.resumed, options, facts.data.val);
        if (!changed.empty()) {
            fmt::print(stderr,
                       "axonn: warning: resuming with settings the checkpoint's run did not have: {}; the "
                       "run goes on, but not as the interrupted one would have\n",
                       fmt::join(changed, ", "));
        }
    } else if (!options.resume.empty()) {
        fmt::print("  --resume latest: no complete checkpoint in {} yet, so a new run\n", options.ckpt_dir.string());
    } else if (!options.init_from.empty()) {
        fmt::print("  weights from {}\n", options.init_from.string());
    }
}

void print_checkpoints(TrainOptions const& options) {
    if (options.ckpt_dir.empty()) {
        fmt::print("  no --ckpt-dir: the trained weights will not be kept (pass --ckpt-dir DIR to keep them)\n");
        return;
    }
    fmt::print("  checkpoints in {}{}, at the end{}\n", options.ckpt_dir.string(),
               options.ckpt_every > 0 ? fmt::format(" every {} steps{}", options.ckpt_every,
                                                    options.ckpt_async ? " (written in the background)" : "")
                                      : "",
               " and on SIGTERM, SIGUSR1, Ctrl-C or SIGHUP");
}

// The groups of each axis: Z's weight prefetches run on its second communicator.
std::vector<Group> axis_groups(Group axis) {
    return axis == Group::z ? std::vector<Group>{Group::z, Group::z_prefetch} : std::vector<Group>{axis};
}

}  // namespace

void print_training_banner(TrainOptions const& options, BannerFacts const& facts) {
    print_model(options, facts.model);
    print_grid(options, facts.model, facts.grid, facts.placement);
    print_backend(options, facts.backend, facts.gemm_rate);
    print_data(options, facts.data, facts.tokenizer);
    print_start(options, facts);
    print_checkpoints(options);
    std::fflush(stdout);
}

void AxisTraffic::add(std::vector<CollectiveRecord> const& calls) {
    for (Group axis : {Group::data, Group::z, Group::y, Group::x}) {
        CommunicationTime const step = communication_time(calls, axis_groups(axis));
        time_[axis].busy_s += step.busy_s;
        time_[axis].waited_s += step.waited_s;
    }
}

std::string AxisTraffic::summary(ProcessGrid& grid) const {
    std::string text;
    for (auto const& [axis, spent] : time_) {
        std::uint64_t bytes = 0;
        for (Group group : axis_groups(axis)) bytes += grid.traffic().bytes(group);
        if (bytes == 0) continue;
        text += fmt::format("\n  {:<4} {:>10}, in flight {:.3f} s, waited {:.3f} s ({:.0f}% hidden)", group_name(axis),
                            human_bytes(static_cast<double>(bytes)), spent.busy_s, spent.waited_s,
                            100.0 * spent.hidden_fraction());
    }
    return text;
}

}  // namespace axonn
