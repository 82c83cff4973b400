#include "axonn/train/trainer.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/comm/job_errors.h"
#include "axonn/comm/rank_zero.h"
#include "axonn/comm/same_on_every_rank.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/timer.h"
#include "axonn/core/trace.h"
#include "axonn/io/tokenizer.h"
#include "axonn/model/decoder.h"
#include "axonn/train/checkpoint_policy.h"
#include "axonn/train/checkpointing.h"
#include "axonn/train/grid_choice.h"
#include "axonn/train/job.h"
#include "axonn/train/metrics.h"
#include "axonn/train/output_kinds.h"
#include "axonn/train/progress.h"
#include "axonn/train/stop_signals.h"
#include "axonn/train/threads.h"
#include "axonn/train/trace_file.h"
#include "axonn/train/train_step.h"
#include "axonn/train/training_data.h"
#include "axonn/train/training_report.h"

#include <mpi.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace axonn {

void validate_train_options(TrainOptions const& options) {
    as_usage_errors([&] {
        options.model.validate();
        AXONN_REQUIRE(options.steps > 0, "--steps must be at least 1, got {}", options.steps);
        AXONN_REQUIRE(options.batch > 0, "--batch must be at least 1, got {}", options.batch);
        AXONN_REQUIRE(options.seq > 0, "--seq must be at least 1, got {}", options.seq);
        AXONN_REQUIRE(options.seq <= options.model.context(),
                      "--seq {} is longer than the model's context of {} tokens: lower --seq or raise --context",
                      options.seq, options.model.context());
        require_goldfish_drops_targets(options.goldfish, options.seq, fmt::format("--seq {}", options.seq));
        AXONN_REQUIRE(options.eval_every > 0, "--eval-every must be at least 1, got {}", options.eval_every);
        AXONN_REQUIRE(options.eval_batches >= 0,
                      "--eval-batches must not be negative, got {} (0: up to 8, as many as the validation data holds)",
                      options.eval_batches);
        AXONN_REQUIRE(options.trace_steps > 0, "--trace-steps must be at least 1, got {}", options.trace_steps);
        AXONN_REQUIRE(!options.data.empty(),
                      "no training data: pass --data PATH (a folder written by `axonn prepare`)");
        AXONN_REQUIRE(options.ckpt_every >= 0, "--ckpt-every must not be negative, got {} (0: only at the end)",
                      options.ckpt_every);
        AXONN_REQUIRE(options.keep >= 0, "--keep must not be negative, got {} (0 keeps every checkpoint)",
                      options.keep);
        AXONN_REQUIRE(options.ckpt_file_mib >= 1 && options.ckpt_file_mib <= (std::int64_t{1} << 20),
                      "--ckpt-file-size must lie in [1, 1048576] MiB, got {}", options.ckpt_file_mib);
        AXONN_REQUIRE(!options.ckpt_dir.empty() || (options.ckpt_every == 0 && options.keep == 0),
                      "--ckpt-every and --keep need --ckpt-dir DIR, where the checkpoints go");
        AXONN_REQUIRE(!options.ckpt_async || options.ckpt_every > 0,
                      "--ckpt-async writes the --ckpt-every checkpoints in the background: pass --ckpt-every N (and "
                      "--ckpt-dir DIR), or leave --ckpt-async out");
        AXONN_REQUIRE(options.resume.empty() || options.init_from.empty(),
                      "--resume continues a run and --init-from starts a new one from weights: pass one of them");
        check_tokenizer_name(options.tokenizer);
        parse_axis_order(options.grid_order);
        options.schedule.validate();
        options.optimizer.validate();
        options.sample.validate("--sample-tokens");
        // From a megaflop to an exaflop a second, as a machine profile's rates: 1e-300 made an MFU of 4.8e300.
        double const rate = options.gemm_rate_gflops;
        AXONN_REQUIRE(rate == 0 || (rate >= 1e-3 && rate <= 1e9),
                      "--gemm-rate must be a GEMM rate from 0.001 to 1e9 GFLOP/s, got {} (or leave it out to measure "
                      "the rate)",
                      rate);
        use_threads(options.threads);
    });
}

namespace {

// Evaluations of more batches, and samples of more tokens, than these show their own progress.
constexpr int quiet_evaluation_batches = 32;
constexpr int quiet_sample_tokens = 256;

bool is_world_leader() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
}

int world_size() {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    return world;
}

// --init-from's model replaces --model: its vocabulary must be the tokenizer's, its context hold --seq, and a
// model the command line names explicitly must be it (not silently another): the --model preset whole, with any
// shape options, or else each shape option given (not the default preset's other dimensions).
ModelConfig init_source_model(TrainOptions const& options, Tokenizer const& tokenizer) {
    ModelConfig const source = init_source_config(options.init_from);
    AXONN_REQUIRE(source.vocab_size() == tokenizer.vocab_size(),
                  "--init-from {} has a vocabulary of {} tokens, but the {} "
                  "tokenizer has {}: pass the --tokenizer the model was trained with",
                  options.init_from.string(), source.vocab_size(), tokenizer.name(), tokenizer.vocab_size());
    ShapeOverrides const& shape = options.model_overrides;
    bool const shape_given = shape.layers || shape.heads || shape.width || shape.context;
    if (options.model_preset_given || shape_given) {
        ModelConfig const asked = options.model_preset_given ? options.model : source.with_overrides(shape);
        std::string const differences = model_differences(source, asked);
        if (!differences.empty()) {
            throw UsageError(fmt::format("--init-from {} is not the model that {} ask for: {}; drop them (the model "
                                         "is --init-from's), or start from another source",
                                         options.init_from.string(),
                                         options.model_preset_given ? "--model and the shape options"
                                                                    : "the shape options",
                                         differences));
        }
    }
    as_usage_errors([&] {
        AXONN_REQUIRE(options.seq <= source.context(),
                      "--seq {} is longer than the context of {} tokens of --init-from {}: "
                      "lower --seq",
                      options.seq, source.context(), options.init_from.string());
    });
    return source;
}

// The model made final: the tokenizer's vocabulary, or the model of --init-from.
void settle_model(TrainOptions& options, Tokenizer const& tokenizer) {
    options.schedule.total_steps = options.steps;
    options.model.set_vocab_size(tokenizer.vocab_size());
    if (!options.init_from.empty()) {
        options.init_from = resolve_init_source(options.init_from, "--init-from");
        options.model = init_source_model(options, tokenizer);
    }
}

// The grid made final (--grid auto chooses one), checked against the model and the world.
void settle_grid(TrainOptions& options) {
    int const world = world_size();
    if (options.grid_auto) {
        options.grid = choose_grid(options.model, options.batch, options.seq, options.run, options.grid_order, world);
        // `--metrics` or `--trace` with --overwrite replaced the tuned grid or the profile the choice read.
        std::vector<std::filesystem::path> const read = grid_auto_inputs();
        options.read_files.insert(options.read_files.end(), read.begin(), read.end());
    }
    as_usage_errors([&] {
        require_grid_fits(options.model.architecture(), options.run.model, options.grid, world, options.batch);
        options.run.pass_batch(options.batch / options.grid.batch_replicas());
    });
}

// Where the ranks run (collective); the first rank of a machine that runs more threads than it has CPUs warns.
NodePlacement placed_on_nodes(int threads) {
    NodePlacement const placement = node_placement();
    warn_if_oversubscribed(threads, placement);
    return placement;
}

// Validation before step `step`: at 0, every --eval-every steps and at the end (none without validation data).
bool validation_due(TrainOptions const& options, bool has_validation, std::int64_t step) {
    return has_validation && (step % options.eval_every == 0 || step == options.steps);
}

// The step a resumed run starts at, and so continues its metrics and trace from: its checkpoint's, or 0 for the
// first run of a job that always passes --resume. Nothing for a run not resumed.
std::optional<std::int64_t> resume_step(TrainOptions const& options, std::optional<CheckpointReader> const& resumed) {
    if (options.resume.empty()) return std::nullopt;
    return resumed ? resumed->index().step : 0;
}

// The launches that computed the steps a resumed run starts from: its lineage less its own launch.
RunLineage resumed_lineage(TrainOptions const& options) {
    return RunLineage(options.lineage.begin(), options.lineage.end() - (options.lineage.empty() ? 0 : 1));
}

// This launch's id.
std::string launch_id(TrainOptions const& options) {
    return options.lineage.empty() ? std::string() : options.lineage.back().id;
}

// Resumed from a checkpoint a rollback set aside: the copy of --metrics that rollback made, where it exists.
std::filesystem::path branch_records(TrainOptions const& options, std::optional<CheckpointReader> const& resumed) {
    if (!resumed || options.metrics.empty()) return {};
    std::filesystem::path const folder =
        resumed->folder().has_filename() ? resumed->folder() : resumed->folder().parent_path();
    std::string const mark = rollback_mark_of(folder.filename().string());
    std::filesystem::path const copy = options.metrics.string() + mark;
    std::error_code error;
    return !mark.empty() && std::filesystem::is_regular_file(copy, error) ? copy : std::filesystem::path();
}

std::optional<MetricsResume> metrics_resume(TrainOptions const& options, bool has_validation,
                                            std::optional<CheckpointReader> const& resumed) {
    std::optional<std::int64_t> const step = resume_step(options, resumed);
    if (!step) return std::nullopt;
    return MetricsResume{*step, validation_due(options, has_validation, *step), resumed_lineage(options),
                         branch_records(options, resumed)};
}

// Everything a training run holds, built once from its options, in the order the checks must come: a bad output
// path or checkpoint folder fails before any model is allocated.
struct TrainingRun {
    TrainingRun(TrainOptions& options, std::unique_ptr<Tokenizer> tokenizer, std::optional<CheckpointReader> resumed);

    // The weights the run starts from: the RNG's, then a resumed checkpoint's (everything, bit for bit) or
    // --init-from's.
    void load_start();
    // The GEMM rate in the run's precision, measured now (or --gemm-rate's): MFU's denominator.
    void measure_gemm_rate();
    void print_banner();

    TrainOptions const& options;
    std::unique_ptr<Tokenizer> tokenizer;
    std::optional<CheckpointReader> resumed;
    bool leader;
    NodePlacement placement;
    Job job;
    TrainingData data;
    ResumePoint resume_point;  // checked before the checkpoint folder is changed for the resumed run
    std::optional<CheckpointDirLock> ckpt_lock;
    bool trace_continued;  // the leader's: --trace names the trace of the run's earlier launches, which it continues
    std::unique_ptr<TraceFile> trace;  // none without --trace; every rank checks its path before metrics are opened
    MetricsLog metrics;
    std::string metrics_failure;  // rank 0's: a record it could not write (the run saves, then ends with it)
    Decoder model;
    AdamW optimizer;
    int start_step = 0;
    double restore_seconds = 0;
    GemmRateMeasurement gemm_rate{};
    double peak_flops = 0;  // the MFU denominator: the measured GEMM rate of every core or GPU of the run
};

// Everything the run reads that an output could destroy: the data, the config and grid files, and the folder of
// the checkpoint or the model it starts from.
std::vector<std::filesystem::path> run_inputs(TrainOptions const& options, TrainingData const& data,
                                              std::optional<CheckpointReader> const& resumed) {
    std::vector<std::filesystem::path> inputs = data.inputs();
    inputs.insert(inputs.end(), options.read_files.begin(), options.read_files.end());
    if (resumed) inputs.push_back(resumed->folder());
    if (!options.init_from.empty()) inputs.push_back(options.init_from);
    return inputs;
}

// A resumed run continues the trace its earlier launches wrote, whatever --overwrite says (which replaces another
// run's file).
bool continues_trace(TrainOptions const& options) {
    return !options.resume.empty() && is_trace_of_run(options.trace, options.run_id);
}

// Checks the checkpoint folder and the metrics and trace paths before anything is written. Rank 0 decides for all:
// it alone writes these files, and another rank that looked after rank 0 had opened them (the metrics file locked,
// the trace's partial file made) would refuse the run's own outputs.
void check_outputs(TrainOptions const& options, TrainingData const& data,
                   std::optional<CheckpointReader> const& resumed) {
    std::vector<std::filesystem::path> const inputs = run_inputs(options, data, resumed);
    decided_by_rank_zero([&] {
        // First: each check below suggests a path, which must not be another output's (`--trace` naming the
        // checkpoint folder was told to name a file inside it).
        require_distinct_outputs({{"--metrics", options.metrics}, {"--trace", options.trace},
                                  {"--ckpt-dir", options.ckpt_dir, true}});
        if (!options.ckpt_dir.empty()) {
            // Its saves and prunings would write into the model the run starts from.
            if (!options.init_from.empty()) require_not_an_input(options.ckpt_dir, "--ckpt-dir", {options.init_from});
            require_checkpoint_folder_for_run(options.ckpt_dir, data.inputs(), resumed, options.run_id);
            std::int64_t const start = resumed ? resumed->index().step : 0;
            // The run's own checkpoints up to its start, which --keep prunes as it saves (later ones are set aside).
            auto const kept = std::ranges::count_if(complete_checkpoints(options.ckpt_dir),
                                                    [&](CheckpointEntry const& entry) { return entry.step <= start; });
            require_room_for_checkpoints(options.ckpt_dir, checkpoint_room(options, start, world_size(), kept));
            for (std::filesystem::path const& file : options.read_files) {  // the config files, the grid file
                require_input_outside(file, "the input", options.ckpt_dir, "--ckpt-dir",
                                      "which this run's saves and prunings change: move it out of the folder");
            }
        }
        if (!options.metrics.empty()) {
            require_not_an_input(options.metrics, "--metrics", inputs);
            // Before the folder's check: a checkpoint folder is no folder to suggest a file in.
            require_apart_from_models_and_data(options.metrics, "--metrics");
            require_not_a_folder(options.metrics, "--metrics", "metrics.jsonl");
            require_writable_output(options.metrics, "metrics file", options.overwrite || !options.resume.empty());
            if (auto const resume = metrics_resume(options, data.val.has_value(), resumed)) {
                require_resumable_metrics_file(options.metrics, options.run_id, *resume, options.overwrite);
            }
        }
        if (!options.trace.empty()) {
            require_existing_folder(options.trace, "--trace");
            require_not_an_input(options.trace, "--trace", inputs);
            require_apart_from_models_and_data(options.trace, "--trace");
            require_not_a_folder(options.trace, "--trace", "trace.json");
            bool const continued = continues_trace(options);
            require_replaceable_output(options.trace, "trace file", options.overwrite || continued);
            if (continued) require_continuable_trace(options.trace);
        }
        return std::string();
    });
}

// Every rank writes its shards of each checkpoint into the folder rank 0 made: one that cannot see it there (node-
// local storage, a relative path from another working directory) failed at the first save, after the training.
void require_folder_on_every_rank(std::filesystem::path const& ckpt_dir) {
    MPI_Barrier(MPI_COMM_WORLD);  // rank 0 has made the folder
    std::error_code error;
    bool const folder = std::filesystem::is_directory(ckpt_dir, error);
    bool const writable = folder && ::access(ckpt_dir.c_str(), W_OK) == 0;
    // Read now: the collective below may change errno.
    std::string const problem = writable ? "" : folder ? std::strerror(errno) : "it is not a folder there";
    if (auto const rank = first_rank_where_false(writable)) {
        // Rank 0 itself (the folder made or found unwritable: a read-only or immutable folder): the reason.
        AXONN_REQUIRE(*rank != 0, "cannot write into --ckpt-dir {}: {}; make it writable, or choose another folder",
                      ckpt_dir.string(), problem);
        fail("rank {} cannot write into --ckpt-dir {}, which rank 0 can: every rank writes its part of each "
             "checkpoint there, so it must be one folder all ranks share (give an absolute path on a shared file "
             "system)",
             *rank, ckpt_dir.string());
    }
}

// Checks every output before the checkpoint folder is made and locked (a run refused leaves nothing behind), then
// locks it.
std::optional<CheckpointDirLock> lock_checkpoint_folder(TrainOptions const& options, TrainingData const& data,
                                                        bool leader, std::optional<CheckpointReader> const& resumed) {
    check_outputs(options, data, resumed);
    std::optional<CheckpointDirLock> lock;
    if (!options.ckpt_dir.empty() && leader) lock.emplace(options.ckpt_dir);
    if (!options.ckpt_dir.empty()) require_folder_on_every_rank(options.ckpt_dir);
    return lock;
}

// A resumed run that is no rollback cuts from its metrics and its trace the records of a branch a rollback
// abandoned, which a rollback not given those files left there (abandoned_by): rank 0 copies each such file whole
// first and says where (they were cut without a copy, and the gap note blamed a missing --metrics).
void keep_abandoned_records(TrainOptions const& options, std::optional<CheckpointReader> const& resumed,
                            bool trace_continued) {
    std::optional<std::int64_t> const step = resume_step(options, resumed);
    if (!step || (options.metrics.empty() && !trace_continued)) return;
    std::string const note = decided_by_rank_zero([&] {
        ResumedFrom const from{*step, resumed_lineage(options), set_aside_branches(options.ckpt_dir, *step)};
        std::vector<ContinuedLog> logs;
        std::optional<StepSpan> abandoned;
        auto const add = [&](char const* option, std::filesystem::path const& path, std::optional<StepSpan> steps) {
            if (!steps) return;
            logs.push_back({option, path});
            widen(abandoned, steps->first);
            widen(abandoned, steps->last);
        };
        if (!options.metrics.empty()) {
            add("--metrics", options.metrics, abandoned_records(options.metrics, options.run_id, from));
        }
        if (trace_continued) add("--trace", options.trace, abandoned_steps(options.trace, from));
        return abandoned ? copy_abandoned_records_aside(logs, *abandoned, *step) : std::string();
    });
    if (is_world_leader()) fmt::print("{}", note);
}

// With the checkpoint folder locked: sets a rolled-back run's later checkpoints aside (or keeps the records of an
// earlier rollback's abandoned steps), then opens the metrics.
MetricsLog open_metrics(TrainOptions const& options, TrainingData const& data, bool leader,
                        std::optional<CheckpointReader> const& resumed, bool trace_continued) {
    bool rolled_back = false;
    if (!options.ckpt_dir.empty()) {
        std::vector<ContinuedLog> logs;  // rank 0's decide
        if (!options.metrics.empty()) logs.push_back({"--metrics", options.metrics});
        if (trace_continued) logs.push_back({"--trace", options.trace});
        rolled_back = set_aside_rolled_back_checkpoints(options.ckpt_dir, resumed, logs);
    }
    if (!rolled_back) keep_abandoned_records(options, resumed, trace_continued);
    if (options.metrics.empty() || !leader) return MetricsLog();
    MetricsLog metrics(options.metrics, options.run_id, launch_id(options), options.overwrite,
                       metrics_resume(options, data.val.has_value(), resumed));
    fmt::print("{}", metrics.notes());
    return metrics;
}

std::unique_ptr<TraceFile> open_trace(TrainOptions const& options, ProcessGrid& grid,
                                      std::optional<CheckpointReader> const& resumed) {
    if (options.trace.empty()) return nullptr;
    return std::make_unique<TraceFile>(
        options.trace, grid, replaced_only_if(options.overwrite),
        TracedRun{options.run_id, launch_id(options), resume_step(options, resumed), resumed_lineage(options)});
}

TrainingRun::TrainingRun(TrainOptions& options_, std::unique_ptr<Tokenizer> tokenizer_,
                         std::optional<CheckpointReader> resumed_)
    : options(options_),
      tokenizer(std::move(tokenizer_)),
      resumed(std::move(resumed_)),
      leader(is_world_leader()),
      placement(placed_on_nodes(options_.threads)),
      job(options_.run, {options_.grid, options_.grid_order, options_.debug_collectives}),
      data(options_, ShardTokenizer{tokenizer->name(), tokenizer->vocab_size()}),
      resume_point(resumed ? check_resume_point(*resumed, job.grid().comm(Group::world), data.train, options_.new_data)
                           : ResumePoint{}),
      ckpt_lock(lock_checkpoint_folder(options_, data, leader, resumed)),
      trace_continued(leader && continues_trace(options_)),
      trace(open_trace(options_, job.grid(), resumed)),
      metrics(open_metrics(options_, data, leader, resumed, trace_continued)),
      model(options_.model.architecture(), job.backend(), job.grid(), job.pass_batch(options_.batch), options_.seq,
            options_.run.model),
      optimizer(model.segments(), model.layout().total(), job.backend(), options_.optimizer) {}

void TrainingRun::load_start() {
    model.init_weights(options.seed);
    if (resumed) {
        Stopwatch restore_watch;
        restore_checkpoint(*resumed, resume_point, model, optimizer, data.train);
        start_step = resume_point.step;
        restore_seconds = restore_watch.seconds();
    } else if (!options.init_from.empty()) {
        load_initial_weights(options.init_from, options.model, model);  // settle_model made it the source's
    }
}

// Rank 0 measures and every rank takes its rate: about half a second of GEMMs on a CPU core (three sizes, four times
// each) that every rank would otherwise run at once, at every start of a run, and that ranks sharing cores would
// slow each other in.
// MFU then divides by one core's (or GPU's) rate times the job's cores, as before.
void TrainingRun::measure_gemm_rate() {
    if (options.gemm_rate_gflops > 0) {
        bool const per_core = job.backend().device_context().device < 0;
        gemm_rate = {options.gemm_rate_gflops * 1e9, per_core, {}};  // no hardware measured: the banner names the flag
    } else {
        nlohmann::json const shared = nlohmann::json::parse(decided_by_rank_zero([this] {
            GemmRateMeasurement const measured = job.backend().measure_gemm_rate();
            return nlohmann::json{{"flops_per_s", measured.flops_per_s},
                                  {"per_core", measured.per_core},
                                  {"hardware", measured.hardware}}
                .dump();
        }));
        gemm_rate = {shared.at("flops_per_s").get<double>(), shared.at("per_core").get<bool>(),
                     shared.at("hardware").get<std::string>()};
    }
    peak_flops = gemm_rate.flops_per_s * (gemm_rate.per_core ? options.threads : 1) * job.grid().world_size();
}

void TrainingRun::print_banner() {
    if (!leader) return;
    print_training_banner(options, {model, job.grid(), placement, job.backend(), gemm_rate, data, *tokenizer, resumed,
                                    start_step, restore_seconds});
}

// The mean loss over the validation batches' targets. With a loss mask (fine-tuning records), the mean over the
// targets that count, whatever their share of each batch: each batch's mean weighs as much as its targets.
float evaluate(TrainingRun& run) {
    TrainOptions const& options = run.options;
    DataLoader& loader = *run.data.val;
    BatchBuffers& batch = *run.data.val_batch;
    int const batches = run.data.eval_batches;
    loader.restore({});  // the same validation batches every time
    Progress progress("validate", batches, batches > quiet_evaluation_batches && run.leader ? stderr : nullptr);
    double sum = 0.0, weight = 0.0;
    for (int i = 0; i < batches; ++i) {
        loader.next_batch(batch.tokens.data(), batch.targets.data(), batch.mask());
        std::vector<Batch> const passes = local_passes(run.job.grid(), options, batch, batch.mask());
        double const batch_weight = batch.mask() != nullptr ? run.model.global_loss_weight(passes) : 1.0;
        sum += batch_weight * eval_step(run.model, passes);
        weight += batch_weight;
        progress.update(i + 1, "");
    }
    progress.finish();
    return weight > 0.0 ? static_cast<float>(sum / weight) : 0.0f;  // no target counts: a loss of 0, as the model's
}

// What a run's weights came from, for errors about its first step.
std::string start_weights(TrainingRun const& run) {
    if (run.resumed) return fmt::format("checkpoint {}", run.resumed->folder().string());
    if (!run.options.init_from.empty()) return fmt::format("--init-from {}", run.options.init_from.string());
    return fmt::format("the random initialization of seed {}", run.options.seed);
}

// A loss or norm that is not finite before this run's first update: no learning rate of this run has acted yet,
// so the weights it started from are to blame.
[[noreturn]] void fail_at_start(TrainingRun const& run, std::string_view what, float value) {
    fail("the {} is {} at step {}, before this run's first update: the weights it starts from ({}) give values that "
         "are not finite; check those weights, or start from others",
         what, value, run.start_step, start_weights(run));
}

// What to change after a run diverged: clipping is suggested only where it was off.
std::string divergence_fixes(TrainOptions const& options) {
    return options.optimizer.grad_clip > 0 ? "lower --lr or raise --warmup"
                                           : "lower --lr, raise --warmup, or turn --grad-clip on (1 is usual)";
}

// The first loss or norm that is not finite ends the run, before it reaches the weights.
void require_finite_step(TrainingRun const& run, StepResult const& result, int step, float lr) {
    if (result.updated) return;
    std::string_view const what = std::isfinite(result.loss) ? "training gradient norm" : "training loss";
    float const value = std::isfinite(result.loss) ? result.grad_norm : result.loss;
    if (step == run.start_step) fail_at_start(run, what, value);
    // Steps count from 0, as --metrics counts them; the progress bar counts the steps done.
    fail("the {} became {} at step {} (the progress bar's {}/{}; learning rate {:g}): the model diverged; {}", what,
         std::isnan(value) ? std::string("NaN") : fmt::format("{}", value), step, step + 1, run.options.steps, lr,
         divergence_fixes(run.options));
}

// What the loop carries from step to step besides the run itself.
struct LoopState {
    TrainSummary summary{NAN, NAN, NAN, ""};
    AxisTraffic traffic;
    double flops_per_step = 0;
    GoldfishShare goldfish_step;    // of the step's global batch
    GoldfishShare goldfish_launch;  // of every step of this launch
};

std::optional<float> validate_if_due(TrainingRun& run, int step, LoopState& loop) {
    TrainOptions const& options = run.options;
    if (!validation_due(options, run.data.val.has_value(), step)) return std::nullopt;
    float const val_loss = evaluate(run);
    if (!std::isfinite(val_loss) && step == run.start_step) fail_at_start(run, "validation loss", val_loss);
    AXONN_REQUIRE(std::isfinite(val_loss), "the validation loss became {} at step {}: the model diverged; {}",
                  std::isnan(val_loss) ? std::string("NaN") : fmt::format("{}", val_loss),
                  step, divergence_fixes(options));
    if (step == 0) loop.summary.first_val_loss = val_loss;
    loop.summary.last_val_loss = val_loss;
    return val_loss;
}

// The next global batch into the run's buffers, with its loss weights; returns them (null: every target counts).
float const* next_training_batch(TrainingRun& run, int step, LoopState& loop) {
    TrainOptions const& options = run.options;
    TrainingData& data = run.data;
    data.train.next_batch(data.batch.tokens.data(), data.batch.targets.data(), data.batch.mask());
    // The Goldfish mask of the whole global batch, from its targets alone: the same on every rank and grid, and so
    // is the share it drops (of a masked batch's responses: its prompts' targets are -1 by then).
    bool const goldfish = options.goldfish.enabled();
    if (goldfish) goldfish_mask(options.goldfish, data.batch.targets, options.seq, step, data.loss_mask);
    if (data.batch.mask() != nullptr) apply_data_mask(data.batch, data.loss_mask, goldfish);
    if (goldfish) {
        loop.goldfish_step = goldfish_share(data.batch.targets, data.loss_mask);
        loop.goldfish_launch += loop.goldfish_step;
    }
    return data.loss_mask.empty() ? nullptr : data.loss_mask.data();
}

// The metrics record of a step: its loss, speed and communication (and the Goldfish split losses).
nlohmann::json step_record(TrainingRun const& run, LoopState const& loop, int step, StepResult const& result, float lr,
                           double seconds, CommunicationTime const& communication, std::optional<float> val_loss) {
    double const model_flops_per_s = loop.flops_per_step / seconds;
    nlohmann::json record = {{"step", step},
                             {"loss", result.loss},
                             {"lr", lr},
                             {"grad_norm", result.grad_norm},
                             {"tokens_per_s", run.options.batch * run.options.seq / seconds},
                             {"model_flops_per_s", model_flops_per_s},
                             {"mfu", model_flops_per_s / run.peak_flops},
                             {"comm_exposed_s", communication.waited_s},
                             {"comm_hidden_fraction", communication.hidden_fraction()}};
    if (val_loss) record["val_loss"] = *val_loss;
    if (run.options.goldfish.enabled()) {  // `loss` is the kept targets' mean
        record["loss_all"] = result.masked->all_targets;
        record["loss_kept"] = result.masked->kept_targets;
        record["loss_dropped"] = result.masked->dropped_targets;
        record["goldfish_dropped"] = loop.goldfish_step.fraction();
    }
    return record;
}

// Whether --trace records `step`: one of the first --trace-steps of this launch (a resumed run traces its own).
bool traced_step(TrainingRun const& run, int step) {
    return step - run.start_step < run.options.trace_steps;
}

// Writes a metrics record. In a run that keeps checkpoints, a write that fails (a full disk) is kept on rank 0 and
// ends the run at the next step boundary after a save (CheckpointPolicy::stop_if_asked): it ended the run at once,
// losing its steps since the last save. Without a --ckpt-dir nothing would be saved: the failure ends the run now,
// and says so.
void write_metrics(TrainingRun& run, nlohmann::json const& record) {
    if (!run.metrics_failure.empty()) return;
    try {
        run.metrics.write(record);
    } catch (Error const& e) {
        std::string const failure =
            fmt::format("{} (its record of step {} is missing)", e.what(), record["step"].dump());
        if (run.options.ckpt_dir.empty()) {
            fail("{}; the run stops there, and without --ckpt-dir none of its training is kept", failure);
        }
        run.metrics_failure = failure;
    }
}

// One optimisation step: the batch, the update, the traffic, the trace and the metrics. Returns its record.
nlohmann::json train_one_step(TrainingRun& run, int step, std::optional<float> val_loss, LoopState& loop) {
    ProcessGrid& grid = run.job.grid();
    float const* loss_mask = next_training_batch(run, step, loop);
    float const lr = run.options.schedule.at(step);
    std::vector<CollectiveRecord> const evaluation_calls = grid.traffic().take_calls();
    Stopwatch watch;
    StepResult const result =
        train_step(run.model, run.optimizer, local_passes(grid, run.options, run.data.batch, loss_mask), lr);
    double const seconds = watch.seconds();
    std::vector<CollectiveRecord> const calls = grid.traffic().take_calls();
    require_finite_step(run, result, step, lr);
    loop.summary.last_train_loss = result.loss;
    loop.traffic.add(calls);
    if (run.trace && traced_step(run, step)) {
        run.trace->add_calls(evaluation_calls);
        run.trace->add_calls(calls);
    }
    nlohmann::json const record =
        step_record(run, loop, step, result, lr, seconds, communication_time(calls), val_loss);
    write_metrics(run, record);
    return record;
}

// The progress bar's status after a step.
std::string step_status(nlohmann::json const& record) {
    return fmt::format("loss {:.4f}{} | {:.0f} tok/s | MFU {:.1f}%", record["loss"].get<float>(),
                       record.contains("val_loss") ? fmt::format(" val {:.4f}", record["val_loss"].get<float>()) : "",
                       record["tokens_per_s"].get<double>(), 100.0 * record["mfu"].get<double>());
}

// The closing validation's record: the loss after the last update.
void close_validation(TrainingRun& run, int step, std::optional<float> val_loss) {
    if (!val_loss) return;
    write_metrics(run, {{"step", step}, {"val_loss", *val_loss}});
    if (run.leader) fmt::print(stderr, "\nfinal validation loss {:.4f}\n", *val_loss);
}

// A --prompt longer than the sequences the model is trained on: the closing sample reads only its last --seq
// tokens, which the run says at its start, not after the training (as `axonn generate` says it).
void warn_about_a_long_prompt(TrainingRun const& run) {
    TrainOptions const& options = run.options;
    if (!run.leader || options.sample.new_tokens == 0) return;
    std::size_t const tokens = run.tokenizer->encode(options.prompt).size();
    if (tokens <= static_cast<std::size_t>(options.seq)) return;
    fmt::print(stderr,
               "axonn: warning: --prompt has {} tokens, more than the {} of the sequences the model is trained on "
               "(--seq): the closing sample reads only its last {}\n",
               tokens, options.seq, options.seq);
}

// A sample of the trained model on the training grid, with the context it was trained on: never gathered.
std::string closing_sample(TrainingRun& run) {
    TrainOptions const& options = run.options;
    std::vector<std::int32_t> prompt = run.tokenizer->encode(options.prompt);
    if (prompt.empty()) prompt.push_back(run.tokenizer->eot_id());
    Progress sampling("sample", options.sample.new_tokens, run.leader ? stderr : nullptr);
    int done = 0;
    std::vector<std::vector<std::int32_t>> const sampled =
        generate(run.model, std::span(&prompt, 1), options.sample, options.seq, [&](int, std::int32_t) {
            if (options.sample.new_tokens > quiet_sample_tokens) sampling.update(++done, "");
        });
    sampling.finish();
    return options.prompt + run.tokenizer->decode(sampled.front());
}

// The --trace file, of the steps recorded (all of them but where a stop signal ended the run first), up to
// `step`. Collective.
void write_trace(TrainingRun& run, int step) {
    if (!run.trace) return;
    run.trace->stop_recording();
    run.trace->write();
    if (run.leader) {
        int const traced = std::min(step - run.start_step, run.options.trace_steps);
        fmt::print("trace of {} step(s) from step {} of every rank: {}{}\n", traced, run.start_step,
                   run.options.trace.string(),
                   run.trace_continued ? " (continuing the trace of the run's earlier launches)" : "");
    }
}

// After the last step: the trace, what each axis communicated, and the closing sample.
void finish_run(TrainingRun& run, LoopState& loop) {
    TrainOptions const& options = run.options;
    ProcessGrid& grid = run.job.grid();
    write_trace(run, options.steps);
    if (run.leader && loop.goldfish_launch.targets > 0) {
        fmt::print("Goldfish loss: {:.1f}% of this launch's training targets left the loss ({} of {})\n",
                   100 * loop.goldfish_launch.fraction(), loop.goldfish_launch.dropped, loop.goldfish_launch.targets);
    }
    if (run.leader && grid.world_size() > 1) {
        fmt::print("communication of rank 0 in the training steps, per axis:{}\n", loop.traffic.summary(grid));
    }
    if (options.sample.new_tokens == 0) return;
    if (run.job.backend().memory() != Memory::host) {
        if (run.leader) {
            fmt::print("  no closing sample: generation on the {} backend is not written yet\n", options.run.backend);
        }
        return;
    }
    if (!options.ckpt_dir.empty()) {  // the line once, from rank 0
        exit_on_stop_signals(stopped_exit_status,
                             !run.leader ? std::string()
                                         : fmt::format("axonn: stopped by a signal during the closing sample; the "
                                                       "run is saved in {} (step {}): sample it with `axonn generate "
                                                       "--model-dir {}`\n",
                                                       options.ckpt_dir.string(), options.steps,
                                                       options.ckpt_dir.string()));
    }
    std::string const sample = closing_sample(run);
    if (!run.leader) return;
    loop.summary.sample = sample;
    fmt::print("---- sample ----\n{}\n----------------\n", loop.summary.sample);
}

// The training loop: validation when due, a step, a checkpoint when due; a stop signal ends it with a checkpoint.
TrainSummary train(TrainingRun& run) {
    TrainOptions const& options = run.options;
    ProcessGrid& grid = run.job.grid();
    LoopState loop;
    loop.flops_per_step = options.model.architecture().model_flops_per_token(options.seq) * options.batch * options.seq;
    Progress progress("train", options.steps, run.leader ? stderr : nullptr);
    grid.comm(Group::world).barrier_quietly();  // every rank's timeline starts together
    restart_trace_clock();
    CheckpointPolicy checkpoints(options, run.model, run.optimizer, run.data, run.resumed, run.start_step,
                                 run.leader);
    int step = run.start_step;
    try {
        for (; step <= options.steps; ++step) {
            checkpoints.before_step(step, run.metrics_failure);
            if (run.trace && !traced_step(run, step)) run.trace->stop_recording();  // after the last one's span
            TraceSpan const step_span(TraceTrack::steps, [&] { return fmt::format("step {}", step); });
            std::optional<float> const val_loss = validate_if_due(run, step, loop);
            if (step == options.steps) {
                close_validation(run, step, val_loss);
                break;
            }
            nlohmann::json const record = train_one_step(run, step, val_loss, loop);
            checkpoints.after_step(step + 1);
            progress.update(step + 1, step_status(record));
        }
        progress.finish();
        checkpoints.at_end();
        // A signal during the closing validation or the final save: the run is saved; the closing sample, which
        // may take longer than the scheduler waits, is left to the resumed run. Without one, nothing is left to
        // resume: the run ends as finished (0), which a requeue chain built on 75 must not start again. A closing
        // validation record that could not be written ends it with that error.
        checkpoints.stop_if_asked(options.steps, run.metrics_failure, options.sample.new_tokens > 0);
    } catch (StoppedBySignal const&) {  // on every rank alike, after the checkpoint: the steps traced are kept
        write_trace(run, step);
        throw;
    } catch (EndedAfterSave const& failure) {  // the same, and the failure stays the error (the trace's own, if any)
        try {
            write_trace(run, step);
        } catch (Error const& trace_failure) {
            throw EndedAfterSave(fmt::format("{}; the --trace file is not written either: {}", failure.what(),
                                             trace_failure.what()));
        }
        throw;
    } catch (Error const&) {  // maybe on this rank alone: no collective (the trace gathers every rank's spans)
        if (run.leader && run.trace) {
            write_stderr_line(fmt::format("axonn: the --trace file {} is not written: the run ended on the error "
                                          "below", options.trace.string()));
        }
        throw;
    }
    finish_run(run, loop);
    return loop.summary;
}

}  // namespace

TrainSummary run_training(TrainOptions options) {
    validate_train_options(options);
    std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(options.tokenizer, options.tokenizer_dir);
    settle_model(options, *tokenizer);
    std::optional<CheckpointReader> resumed = open_resume_checkpoint(options);
    // The checkpoint's own model: the same shapes (open_resume_checkpoint compared them), and what it carries besides,
    // such as a Llama's special-token ids from an import, which the next save would otherwise drop.
    if (resumed) options.model = resumed->index().model;
    options.run_id = run_identity(options, resumed);
    options.lineage = run_lineage(resumed);
    settle_grid(options);
    TrainingRun run(options, std::move(tokenizer), std::move(resumed));
    run.load_start();
    run.measure_gemm_rate();
    run.print_banner();
    warn_about_a_long_prompt(run);
    return train(run);
}

}  // namespace axonn
