#include "axonn/train/trainer.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/timer.h"
#include "axonn/core/trace.h"
#include "axonn/io/tokenizer.h"
#include "axonn/model/gpt.h"
#include "axonn/perf/planner.h"
#include "axonn/train/checkpointing.h"
#include "axonn/train/data_loader.h"
#include "axonn/train/grid_choice.h"
#include "axonn/train/job.h"
#include "axonn/train/metrics.h"
#include "axonn/train/progress.h"
#include "axonn/train/stop_signals.h"
#include "axonn/train/threads.h"
#include "axonn/train/trace_file.h"
#include "axonn/train/train_step.h"

#include <mpi.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <optional>
#include <span>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// --data DIR with train.bin in it trains on train.bin and validates on val.bin; any other path trains on all
// its shards (never a folder's val.bin) and validates on --val-data, or on the folder's val.bin.
// (The error_code forms: a path that cannot be examined, such as a loop of links, is reported by the reader.)
fs::path training_path(TrainOptions const& options) {
    fs::path const train_file = options.data / "train.bin";
    std::error_code error;
    return fs::is_directory(options.data, error) && fs::exists(train_file, error) ? train_file : options.data;
}

std::optional<fs::path> validation_path(TrainOptions const& options) {
    std::error_code error;
    if (!options.val_data.empty()) {
        if (auto const problem = path_problem(options.val_data)) {
            fail("--val-data {} {}: check the path, or leave --val-data out to validate on val.bin beside --data",
                 options.val_data.string(), *problem);
        }
        return options.val_data;
    }
    fs::path const val_file = options.data / validation_shard_name;
    if (fs::is_directory(options.data, error) && fs::exists(val_file, error)) return val_file;
    return std::nullopt;
}

// Validation data must not be trained on, and a train.bin/val.bin pair must come from one run of prepare (a run
// stopped between writing the two would otherwise pair new training data with old validation data).
void check_data_split(DataLoader const& train, DataLoader const& val) {
    for (TokenShard const& validation : val.shards()) {
        for (TokenShard const& training : train.shards()) {
            std::error_code error;
            require(!fs::equivalent(validation.path(), training.path(), error),
                    "{} is both training and validation data: pass --val-data a shard that is not in --data",
                    validation.path().string());
            bool const pair = training.path().filename() == "train.bin" &&
                              validation.path().filename() == validation_shard_name &&
                              training.path().parent_path() == validation.path().parent_path();
            require(!pair || training.dataset_id() == validation.dataset_id(),
                    "{} and {} come from different runs of `axonn prepare` (one was stopped between them?): run "
                    "prepare again", training.path().string(), validation.path().string());
        }
    }
}

// Every file the run reads, which no output may overwrite.
std::vector<fs::path> input_files(DataLoader const& train, std::optional<DataLoader> const& val) {
    std::vector<fs::path> inputs;
    for (TokenShard const& shard : train.shards()) inputs.push_back(shard.path());
    if (val) {
        for (TokenShard const& shard : val->shards()) inputs.push_back(shard.path());
    }
    return inputs;
}

}  // namespace

void validate_train_options(TrainOptions const& options) {
    as_usage_errors([&] {
        options.model.validate();
        require(options.steps > 0, "--steps must be at least 1, got {}", options.steps);
        require(options.batch > 0, "--batch must be at least 1, got {}", options.batch);
        require(options.seq > 0, "--seq must be at least 1, got {}", options.seq);
        require(options.seq <= options.model.context(),
                "--seq {} is longer than the model's context of {} tokens: lower --seq or raise --context", options.seq,
                options.model.context());
        require(options.eval_every > 0, "--eval-every must be at least 1, got {}", options.eval_every);
        require(options.eval_batches > 0, "--eval-batches must be at least 1, got {}", options.eval_batches);
        require(options.trace_steps > 0, "--trace-steps must be at least 1, got {}", options.trace_steps);
        require(!options.data.empty(), "no training data: pass --data PATH (a folder written by `axonn prepare`)");
        require(options.ckpt_every >= 0, "--ckpt-every must not be negative, got {} (0: only at the end)",
                options.ckpt_every);
        require(options.keep >= 0, "--keep must not be negative, got {} (0 keeps every checkpoint)", options.keep);
        require(options.ckpt_file_mib >= 1 && options.ckpt_file_mib <= (1u << 20),
                "--ckpt-file-size must lie in [1, 1048576] MiB, got {}", options.ckpt_file_mib);
        require(!options.ckpt_dir.empty() || (options.ckpt_every == 0 && options.keep == 0),
                "--ckpt-every and --keep need --ckpt-dir DIR, where the checkpoints go");
        require(options.resume.empty() || options.init_from.empty(),
                "--resume continues a run and --init-from starts a new one from weights: pass one of them");
        check_tokenizer_name(options.tokenizer);
        parse_axis_order(options.grid_order);
        options.schedule.validate();
        options.optimizer.validate();
        options.sample.validate("--sample-tokens");
        use_threads(options.threads);
    });
}

namespace {

// " | gradients communicated in bf16" for the banner, as --grad-comm set it; nothing for fp32.
std::string grad_comm_text(GptOptions const& model) {
    if (model.grad_sum_comm == DType::bf16) return " | gradients communicated in bf16";
    if (model.grad_scatter_comm == DType::bf16) return " | gradients reduce-scattered in bf16, summed in fp32";
    return "";
}

std::string human_bytes(double bytes) {
    char const* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        ++unit;
    }
    return fmt::format("{:.1f} {}", bytes, units[unit]);
}

// This rank's passes of a global batch.
std::vector<Batch> local_passes(Gpt& model, TrainOptions const& options, std::vector<std::int32_t> const& tokens,
                                std::vector<std::int32_t> const& targets, float const* loss_mask = nullptr) {
    return micro_batches(
        replica_rows(model.grid(), options.batch, options.seq, tokens.data(), targets.data(), loss_mask),
        options.run.micro_batch);
}

// Evaluations of more batches, and samples of more tokens, than these show their own progress.
constexpr int quiet_evaluation_batches = 32;
constexpr int quiet_sample_tokens = 256;

// A global batch's tokens, targets and, for data with a loss mask, the mask of each target (else empty).
struct BatchBuffers {
    std::vector<std::int32_t> tokens, targets;
    std::vector<float> loss_mask;

    BatchBuffers(TrainOptions const& options, bool masked)
        : tokens(static_cast<std::size_t>(options.batch) * options.seq), targets(tokens.size()),
          loss_mask(masked ? tokens.size() : 0) {}
    float* mask() { return loss_mask.empty() ? nullptr : loss_mask.data(); }
};

// The mean loss over the validation batches' targets. With a loss mask (fine-tuning records), the mean over the
// targets that count, whatever their share of each batch: each batch's mean weighs as much as its targets.
float evaluate(Gpt& model, TrainOptions const& options, DataLoader& loader, BatchBuffers& batch,
               std::FILE* progress_stream) {
    int const batches = options.eval_batches;
    loader.restore({});  // the same validation batches every time
    Progress progress("validate", batches, batches > quiet_evaluation_batches ? progress_stream : nullptr);
    double sum = 0.0, weight = 0.0;
    for (int i = 0; i < batches; ++i) {
        loader.next_batch(batch.tokens.data(), batch.targets.data(), batch.mask());
        std::vector<Batch> const passes = local_passes(model, options, batch.tokens, batch.targets, batch.mask());
        double const batch_weight = batch.mask() != nullptr ? model.global_loss_weight(passes) : 1.0;
        sum += batch_weight * eval_step(model, passes);
        weight += batch_weight;
        progress.update(i + 1, "");
    }
    progress.finish();
    return weight > 0.0 ? static_cast<float>(sum / weight) : 0.0f;  // no target counts: a loss of 0, as the model's
}

// The step's loss weights: the data's loss mask (0 on the prompt tokens of fine-tuning records) times the Goldfish
// mask, which `loss_mask` holds (computed from the real targets). With Goldfish, prompt targets also become
// ignored (-1), which the model weighs 0 as the mask does: the Goldfish split losses, which count every target not
// ignored, then stay over the responses.
void apply_data_mask(BatchBuffers& batch, std::span<float> loss_mask, bool goldfish) {
    for (std::size_t i = 0; i < loss_mask.size(); ++i) {
        loss_mask[i] = goldfish ? loss_mask[i] * batch.loss_mask[i] : batch.loss_mask[i];
        if (goldfish && batch.loss_mask[i] == 0.0f) batch.targets[i] = -1;
    }
}

// Validation batches beyond one pass over the validation data only repeat it.
void check_evaluation_size(TrainOptions const& options, DataLoader const& val) {
    std::int64_t const available = std::max<std::int64_t>(
        1, (val.total_tokens() - 1) / (static_cast<std::int64_t>(options.batch) * options.seq));
    if (options.eval_batches <= available) return;
    throw UsageError(fmt::format("--eval-batches {} is more than the validation data holds: it has {} batches of {} x "
                                 "{} tokens; use at most {}", options.eval_batches, available, options.batch,
                                 options.seq, available));
}

// The first loss or norm that is not finite ends the run, before it reaches the weights.
void require_finite_step(StepResult const& result, int step, float lr) {
    if (result.updated) return;
    fail("the training {} became {} at step {} (learning rate {:g}): the model diverged; lower --lr, raise --warmup, "
         "or keep --grad-clip on", std::isfinite(result.loss) ? "gradient norm" : "loss",
         std::isfinite(result.loss) ? result.grad_norm : result.loss, step, lr);
}

// The planner's best grid for this model, batch and number of ranks on `machine`, for the step options of the
// run, announced; none if no grid fits.
std::optional<GridShape> plan_best_grid(TrainOptions const& options, int world, MachineProfile const& machine,
                                        std::string const& profile_source) {
    PlanRequest const request = job_plan_request(options.model, world, options.batch, options.seq, options.run,
                                                  options.grid_order, machine);
    std::vector<PlanCandidate> const plan = plan_grids(request);
    if (plan.empty() || plan.front().excluded) return std::nullopt;
    GridShape const& best = plan.front().grid;
    std::string const runner_up = plan.size() > 1 && !plan[1].excluded
                                      ? fmt::format("; next best {} at {:.4f} s", plan[1].grid.to_string(),
                                                    plan[1].time.time_s)
                                      : "";
    fmt::print("grid auto: {} — predicted {:.4f} s per step ({:.4f} s of it exposed communication){}; machine "
               "profile {}\n",
               best.to_string(), plan.front().time.time_s, plan.front().time.exposed_comm_s, runner_up,
               profile_source);
    return best;
}

// --grid auto: the grid `axonn tune` measured fastest for this very job, if its grid file says so; else rank 0
// plans on the local machine profile (configs/machines/local.toml, or a quick calibration now when there is none)
// and every rank gets its choice, so that all ranks agree, also when no grid fits.
GridShape choose_grid(TrainOptions& options, int world) {
    GridJob const job{options.model.summary(), options.batch, options.seq, world};
    if (std::optional<GridFile> const tuned = tuned_grid_for(job)) {
        options.grid_order = tuned->grid_order;
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) {
            fmt::print("grid auto: {} (order {}), measured fastest by `axonn tune` at {:.4f} s per step; {}\n",
                       tuned->grid.to_string(), tuned->grid_order, tuned->step_s, tuned_grid_path().string());
        }
        return tuned->grid;
    }
    LocalProfile const profile = local_machine_profile();
    ProcessGrid everyone(MPI_COMM_WORLD, GridShape{.data = world});
    Communicator& all = everyone.comm(Group::world);
    std::array<double, 4> chosen = {0, 0, 0, 0};
    if (everyone.rank() == 0) {
        if (auto const best = plan_best_grid(options, world, profile.machine, profile.source)) {
            chosen = {static_cast<double>(best->data), static_cast<double>(best->z), static_cast<double>(best->y),
                      static_cast<double>(best->x)};
        }
    }
    all.all_reduce(chosen.data(), chosen.size());  // only rank 0's values are nonzero
    if (chosen[0] == 0) {
        throw UsageError(fmt::format("--grid auto found no grid of {} ranks for this model and batch: run `axonn plan "
                                     "--machine local --gpus {} --batch {} --seq {} --explain` to see why", world,
                                     world, options.batch, options.seq));
    }
    return {static_cast<int>(chosen[0]), static_cast<int>(chosen[1]), static_cast<int>(chosen[2]),
            static_cast<int>(chosen[3])};
}

// The groups of each axis: Z's weight prefetches run on its second communicator.
std::vector<Group> axis_groups(Group axis) {
    return axis == Group::z ? std::vector<Group>{Group::z, Group::z_prefetch} : std::vector<Group>{axis};
}

// What a run's training steps communicated, per axis: bytes, time in flight and time waited.
struct AxisTraffic {
    std::map<Group, CommunicationTime> time;

    void add(std::vector<CollectiveRecord> const& calls) {
        for (Group axis : {Group::data, Group::z, Group::y, Group::x}) {
            CommunicationTime const step = communication_time(calls, axis_groups(axis));
            time[axis].busy_s += step.busy_s;
            time[axis].waited_s += step.waited_s;
        }
    }

    std::string summary(ProcessGrid& grid) const {
        std::string text;
        for (auto const& [axis, spent] : time) {
            std::uint64_t bytes = 0;
            for (Group group : axis_groups(axis)) bytes += grid.traffic().bytes(group);
            if (bytes == 0) continue;
            text += fmt::format("\n  {:<4} {:>10}, in flight {:.3f} s, waited {:.3f} s ({:.0f}% hidden)",
                                group_name(axis), human_bytes(static_cast<double>(bytes)), spent.busy_s,
                                spent.waited_s, 100.0 * spent.hidden_fraction());
        }
        return text;
    }
};

}  // namespace

TrainSummary run_training(TrainOptions options) {
    validate_train_options(options);
    options.schedule.total_steps = options.steps;

    auto const tokenizer = make_tokenizer(options.tokenizer, options.tokenizer_dir);
    options.model.set_vocab_size(tokenizer->vocab_size());
    std::optional<ModelConfig> init_source;
    if (!options.init_from.empty()) {
        options.init_from = resolve_init_source(options.init_from, "--init-from");
        init_source = init_source_config(options.init_from);
        require(init_source->vocab_size() == tokenizer->vocab_size(), "--init-from {} has a vocabulary of {} tokens, "
                "but the {} tokenizer has {}: pass the --tokenizer the model was trained with",
                options.init_from.string(), init_source->vocab_size(), tokenizer->name(), tokenizer->vocab_size());
        options.model = *init_source;
        as_usage_errors([&] {
            require(options.seq <= options.model.context(), "--seq {} is longer than the context of {} tokens of "
                    "--init-from {}: lower --seq", options.seq, options.model.context(), options.init_from.string());
        });
    }
    Architecture const architecture = options.model.architecture();
    std::optional<CheckpointReader> resume_from = open_resume_checkpoint(options);
    int const B = options.batch, T = options.seq;
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (options.grid_auto) options.grid = choose_grid(options, world);
    as_usage_errors([&] {
        require_valid_grid(architecture.declarations, options.grid, world, B);
        options.run.pass_batch(B / (options.grid.data * options.grid.z));
    });
    warn_if_oversubscribed(options.threads);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    bool const leader = world_rank == 0;
    Job job(options.run, {options.grid, options.grid_order, options.debug_collectives});
    Backend& backend = job.backend();
    ProcessGrid& grid = job.grid();
    ShardTokenizer const shard_tokenizer{tokenizer->name(), tokenizer->vocab_size()};
    DataLoader train_loader(training_path(options), B, T, shard_tokenizer);
    std::optional<DataLoader> val_loader;
    if (auto const path = validation_path(options)) {
        val_loader.emplace(*path, B, T, shard_tokenizer);
        check_data_split(train_loader, *val_loader);
        check_evaluation_size(options, *val_loader);
    }
    // A resumed run continues its metrics file; so does the first run of a job that always passes --resume.
    std::optional<std::int64_t> const resume_step =
        resume_from ? std::optional<std::int64_t>(resume_from->index().step)
        : options.resume.empty() ? std::nullopt : std::optional<std::int64_t>(0);
    // A checkpoint folder that cannot be created, another run's, or one in use fails now, not at the first save.
    std::optional<CheckpointDirLock> ckpt_lock;
    if (!options.ckpt_dir.empty()) {
        if (leader) ckpt_lock.emplace(options.ckpt_dir);
        check_checkpoint_folder(options.ckpt_dir, resume_step.value_or(0));
    }
    if (!options.metrics.empty()) {
        // Every rank checks what it can, so that a refused path is one clean error, not rank 0's alone.
        require_not_an_input(options.metrics, "--metrics", input_files(train_loader, val_loader));
        require_writable_output(options.metrics, "metrics file", options.overwrite || !options.resume.empty());
    }
    MetricsLog metrics = options.metrics.empty() || !leader ? MetricsLog()
                                                            : MetricsLog(options.metrics, options.overwrite, resume_step);
    std::optional<TraceFile> trace;
    if (!options.trace.empty()) trace.emplace(options.trace, grid, input_files(train_loader, val_loader));
    Gpt model(architecture, backend, grid, job.pass_batch(B), T, options.run.model);
    model.init_weights(options.seed);
    AdamW optimizer(model.segments(), model.layout().total(), backend, options.optimizer);
    int start_step = 0;
    double restore_seconds = 0;
    if (resume_from) {
        Stopwatch restore_watch;
        start_step = restore_checkpoint(*resume_from, model, optimizer, train_loader);
        restore_seconds = restore_watch.seconds();
    } else if (!options.init_from.empty()) {
        load_initial_weights(options.init_from, *init_source, model);
    }

    GemmRateMeasurement const gemm_rate = backend.measure_gemm_rate();
    double const peak_flops =
        gemm_rate.flops_per_s * (gemm_rate.per_core ? options.threads : 1) * grid.world_size();
    GptMemory const memory = model.memory();
    if (leader) {
        fmt::print("axonn train | model {}\n", options.model.summary());
        fmt::print("  parameters {:.2f} M | memory per rank {} (weights {}, grads {}, AdamW {}, activations {})\n",
                   options.model.parameter_count() / 1e6, human_bytes(memory.total()),
                   human_bytes(memory.parameter_bytes), human_bytes(memory.gradient_bytes),
                   human_bytes(memory.optimizer_bytes), human_bytes(memory.activation_bytes));
        int const passes = B / (grid.size(Axis::data) * grid.size(Axis::z)) / model.max_batch();
        fmt::print("  grid {}{} over {} rank(s) (order {}) | threads {} per rank | overlap {} | {} pass(es) of {} "
                   "sequence(s) per step{}{}{}{}\n",
                   grid.shape().to_string(), options.grid_source.empty() ? "" : " (" + options.grid_source + ")",
                   grid.world_size(), options.grid_order, options.threads,
                   options.run.model.overlap ? "on" : "off", passes, model.max_batch(),
                   options.run.model.recompute == Recompute::layer ? " | layers recomputed" : "",
                   options.run.model.cache_weights ? " | weights cached" : "",
                   grad_comm_text(options.run.model),
                   logit_chunks(static_cast<std::int64_t>(model.max_batch()) * T, options.run.model.logit_rows) > 1
                       ? fmt::format(" | LM head in chunks of {} rows", options.run.model.logit_rows)
                       : std::string());
        fmt::print("  backend {} on {} | measured {} {} GEMM {:.1f} GFLOP/s (MFU denominator: this x {}ranks)\n",
                   backend.name(), gemm_rate.hardware, gemm_rate.per_core ? "single-core" : "device",
                   precision_name(options.run.model.precision), gemm_rate.flops_per_s / 1e9,
                   gemm_rate.per_core ? "threads x " : "");
        fmt::print("  data {} tokens in {} shard(s), tokenizer {} | batch {} x {} tokens, {} steps, lr {:g}\n",
                   train_loader.total_tokens(), train_loader.shard_count(), tokenizer->name(), B, T, options.steps,
                   options.schedule.max_lr);
        if (train_loader.has_loss_mask()) {
            fmt::print("  loss mask: {} of the {} training tokens count as targets (responses, not prompts){}\n",
                       train_loader.loss_tokens(), train_loader.total_tokens(),
                       val_loader && val_loader->has_loss_mask() ? "; validation is masked alike" : "");
        }
        if (!val_loader) fmt::print("  no validation data (pass --val-data or prepare a folder with val.bin)\n");
        if (options.goldfish.enabled()) {
            fmt::print("  Goldfish loss {}: about 1/{} of the training targets leave the loss; validation has no "
                       "Goldfish mask\n", options.goldfish.describe(), options.goldfish.k);
        }
        if (resume_from) {
            fmt::print("  resuming from {} at step {} (verified and read in {:.2f} s)\n", resume_from->folder().string(),
                       start_step, restore_seconds);
            std::vector<std::string> const changed = settings_changed_since(*resume_from, options);
            if (!changed.empty()) {
                fmt::print(stderr, "axonn: warning: resuming with settings the checkpoint's run did not have: {}; the "
                           "run goes on, but not as the interrupted one would have\n", fmt::join(changed, ", "));
            }
        } else if (!options.resume.empty()) {
            fmt::print("  --resume latest: no complete checkpoint in {} yet, so a new run\n", options.ckpt_dir.string());
        } else if (!options.init_from.empty()) {
            fmt::print("  weights from {}\n", options.init_from.string());
        }
        if (options.ckpt_dir.empty()) {
            fmt::print("  no --ckpt-dir: the trained weights will not be kept (pass --ckpt-dir DIR to keep them)\n");
        } else {
            fmt::print("  checkpoints in {}{}, at the end{}\n", options.ckpt_dir.string(),
                       options.ckpt_every > 0 ? fmt::format(" every {} steps", options.ckpt_every) : "",
                       " and on SIGTERM or SIGUSR1");
        }
        std::fflush(stdout);
    }

    BatchBuffers batch(options, train_loader.has_loss_mask());
    std::optional<BatchBuffers> val_batch;
    if (val_loader) val_batch.emplace(options, val_loader->has_loss_mask());
    bool const goldfish = options.goldfish.enabled();
    // The weights of the step's targets: the Goldfish mask, the data's, or both multiplied.
    std::vector<float> loss_mask(goldfish || train_loader.has_loss_mask() ? batch.tokens.size() : 0);
    double const flops_per_step = architecture.model_flops_per_token(T) * B * T;
    TrainSummary summary{NAN, NAN, NAN, ""};
    Progress progress("train", options.steps, leader ? stderr : nullptr);
    grid.comm(Group::world).barrier_quietly();  // every rank's timeline starts together
    restart_trace_clock();
    AxisTraffic traffic;
    // A run that keeps checkpoints saves one and stops cleanly when the scheduler signals.
    std::optional<StopSignals> stop_signals;
    if (!options.ckpt_dir.empty()) stop_signals.emplace();
    // The step of the newest checkpoint in --ckpt-dir: the resumed one, if it lies there.
    std::error_code same_error;
    int last_saved = resume_from && fs::equivalent(resume_from->folder(),
                                                   options.ckpt_dir / checkpoint_folder_name(start_step), same_error)
                         ? start_step
                         : -1;
    auto const save = [&](int step) {
        Stopwatch watch;
        fs::path const folder = save_training_checkpoint(options, model, optimizer, train_loader, step);
        last_saved = step;
        if (leader) fmt::print(stderr, "\ncheckpoint of step {} saved to {} ({:.2f} s)\n", step, folder.string(),
                               watch.seconds());
        return folder;
    };

    for (int step = start_step; step <= options.steps; ++step) {
        if (stop_signals) {
            if (int const signal = stop_signals->received(grid.comm(Group::world))) {
                fs::path const folder =
                    last_saved == step ? options.ckpt_dir / checkpoint_folder_name(step) : save(step);
                throw StoppedBySignal(fmt::format("stopped by {} after {} steps; checkpoint {}; continue with "
                                                  "--resume latest", signal == SIGTERM ? "SIGTERM" : "SIGUSR1", step,
                                                  folder.string()));
            }
        }
        TraceSpan const step_span(TraceTrack::steps, [&] { return fmt::format("step {}", step); });
        bool const last = step == options.steps;
        std::optional<float> val_loss;
        if (val_loader && (step % options.eval_every == 0 || last)) {
            val_loss = evaluate(model, options, *val_loader, *val_batch, leader ? stderr : nullptr);
            require(std::isfinite(*val_loss), "the validation loss became {} at step {}: the model diverged; lower "
                    "--lr, raise --warmup, or keep --grad-clip on", *val_loss, step);
            if (step == 0) summary.first_val_loss = *val_loss;
            summary.last_val_loss = *val_loss;
        }
        if (last) {
            if (val_loss) {
                metrics.write({{"step", step}, {"val_loss", *val_loss}});  // after the last update
                if (leader) fmt::print(stderr, "\nfinal validation loss {:.4f}\n", *val_loss);
            }
            break;
        }
        train_loader.next_batch(batch.tokens.data(), batch.targets.data(), batch.mask());
        // The Goldfish mask of the whole global batch, from its targets alone: the same on every rank and grid.
        if (goldfish) goldfish_mask(options.goldfish, batch.targets, T, step, loss_mask);
        if (batch.mask() != nullptr) apply_data_mask(batch, loss_mask, goldfish);
        float const lr = options.schedule.at(step);
        std::vector<CollectiveRecord> const evaluation_calls = grid.traffic().take_calls();
        Stopwatch watch;
        StepResult const result = train_step(
            model, optimizer,
            local_passes(model, options, batch.tokens, batch.targets, loss_mask.empty() ? nullptr : loss_mask.data()),
            lr);
        double const seconds = watch.seconds();
        std::vector<CollectiveRecord> const calls = grid.traffic().take_calls();
        require_finite_step(result, step, lr);
        summary.last_train_loss = result.loss;
        CommunicationTime const communication = communication_time(calls);
        traffic.add(calls);
        if (trace && step < options.trace_steps) {
            trace->add_calls(evaluation_calls);
            trace->add_calls(calls);
            if (step + 1 == options.trace_steps) trace->stop_recording();
        }

        double const tokens_per_s = B * T / seconds;
        nlohmann::json record = {{"step", step},
                                 {"loss", result.loss},
                                 {"lr", lr},
                                 {"grad_norm", result.grad_norm},
                                 {"tokens_per_s", tokens_per_s},
                                 {"model_flops_per_s", flops_per_step / seconds},
                                 {"mfu", flops_per_step / seconds / peak_flops},
                                 {"comm_exposed_s", communication.waited_s},
                                 {"comm_hidden_fraction", communication.hidden_fraction()}};
        if (val_loss) record["val_loss"] = *val_loss;
        if (goldfish) {  // `loss` is the kept targets' mean
            record["loss_all"] = result.masked->all_targets;
            record["loss_kept"] = result.masked->kept_targets;
            record["loss_dropped"] = result.masked->dropped_targets;
        }
        metrics.write(record);
        if (!options.ckpt_dir.empty() && options.ckpt_every > 0 && (step + 1) % options.ckpt_every == 0 &&
            step + 1 < options.steps) {
            save(step + 1);
        }
        progress.update(step + 1, fmt::format("loss {:.4f}{} | {:.0f} tok/s | MFU {:.1f}%", result.loss,
                                              val_loss ? fmt::format(" val {:.4f}", *val_loss) : "", tokens_per_s,
                                              100.0 * flops_per_step / seconds / peak_flops));
    }
    progress.finish();
    if (!options.ckpt_dir.empty() && last_saved != options.steps) save(options.steps);
    if (trace) {
        trace->stop_recording();
        trace->write();
        if (leader) fmt::print("trace of the first {} step(s) of every rank: {}\n", std::min(options.steps, options.trace_steps),
                               options.trace.string());
    }
    if (leader && grid.world_size() > 1) {
        fmt::print("communication of rank 0 in the training steps, per axis:{}\n", traffic.summary(grid));
    }

    if (options.sample.new_tokens > 0 && backend.memory() != Memory::host) {
        if (leader) fmt::print("  no closing sample: generation on the {} backend is not written yet\n", options.run.backend);
    } else if (options.sample.new_tokens > 0) {
        // On the training grid, with the context the model was trained on: the model is never gathered.
        std::vector<std::int32_t> prompt = tokenizer->encode(options.prompt);
        if (prompt.empty()) prompt.push_back(tokenizer->eot_id());
        Progress sampling("sample", options.sample.new_tokens, leader ? stderr : nullptr);
        int done = 0;
        std::vector<std::vector<std::int32_t>> const sampled =
            generate(model, std::span(&prompt, 1), options.sample, T, [&](int, std::int32_t) {
                if (options.sample.new_tokens > quiet_sample_tokens) sampling.update(++done, "");
            });
        sampling.finish();
        if (leader) {
            summary.sample = options.prompt + tokenizer->decode(sampled.front());
            fmt::print("---- sample ----\n{}\n----------------\n", summary.sample);
        }
    }
    return summary;
}

}  // namespace axonn
