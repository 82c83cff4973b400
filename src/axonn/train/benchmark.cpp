#include "axonn/train/benchmark.h"

#include "axonn/comm/rank_zero.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/rng.h"
#include "axonn/core/timer.h"
#include "axonn/core/trace.h"
#include "axonn/model/decoder.h"
#include "axonn/train/job.h"
#include "axonn/train/output_kinds.h"
#include "axonn/train/threads.h"
#include "axonn/train/trace_file.h"
#include "axonn/train/train_step.h"

#include <fmt/format.h>
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <span>
#include <vector>

namespace axonn {

BenchResult run_benchmark(BenchOptions options) {
    int const B = options.batch, T = options.seq;
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    Architecture const architecture = as_usage_errors([&] {
        return options.model.validated_architecture().with_vocab_split(options.run.model.vocab_split, options.grid,
                                                                        options.run.model.precision);
    });
    as_usage_errors([&] {
        AXONN_REQUIRE(options.iterations > options.warmup,
                      "--iters {} must exceed the {} warm-up iterations that are left out of the average",
                      options.iterations, options.warmup);
        AXONN_REQUIRE(B > 0 && T > 0 && T <= architecture.context,
                      "--batch {} and --seq {} must be at least 1, and --seq "
                      "at most the model's context {}",
                      B, T, architecture.context);
        use_threads(options.threads);
        parse_axis_order(options.grid_order);
        require_grid_fits(options.model.validated_architecture(), options.run.model, options.grid, world, B);
        options.run.pass_batch(B / options.grid.batch_replicas());
    });
    // Before any step: an earlier file is refused at once, decided by rank 0, which writes it (another rank that
    // looked after rank 0 had made its partial file would refuse it).
    decided_by_rank_zero([&] {
        if (!options.trace.empty()) require_output_file(options.trace, "--trace", "trace file", options.overwrite);
        return std::string();
    });
    warn_if_oversubscribed(options.threads, node_placement());

    Job job(options.run, {options.grid, options.grid_order});
    Backend& backend = job.backend();
    ProcessGrid& grid = job.grid();
    int const local_batch = B / options.grid.batch_replicas();
    std::int64_t const tensor_bytes_before = tensor_bytes_in_use();
    reset_tensor_bytes_peak();
    Decoder model(architecture, backend, grid, job.pass_batch(B), T, options.run.model);
    model.init_weights(1);
    AdamW optimizer(model.segments(), model.layout().total(), backend, AdamWConfig{});
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(local_batch) * T), targets(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>(philox4x32({5, 1}, i)[0] % architecture.vocab_size);
        targets[i] = static_cast<std::int32_t>(philox4x32({5, 2}, i)[0] % architecture.vocab_size);
    }
    std::vector<Batch> const passes =
        micro_batches({local_batch, T, tokens.data(), targets.data(), nullptr}, options.run.micro_batch);

    // The machine's speed drifts by ±20% (shared vCPUs): the GEMM rate is measured before and after the timed
    // steps and the higher one is the denominator, so a slow spell during the steps lowers MFU, never raises it.
    GemmRateMeasurement const gemm_rate_before = backend.measure_gemm_rate();
    std::optional<TraceFile> trace;
    if (!options.trace.empty()) {
        trace.emplace(options.trace, grid, replaced_only_if(options.overwrite));
        trace->stop_recording();
    }
    grid.comm(Group::world).barrier_quietly();  // the ranks' timelines start together
    restart_trace_clock();
    std::vector<double> timed_step_s;  // this rank's, then each step's slowest rank's
    CommunicationTime communication;
    StepBreakdownSum breakdown;
    // A device's recorded spans wait for each kernel (kernels/tracing_backend.h), which slows its steps: there the
    // timed steps run unrecorded, and as many steps after them are recorded for the breakdown (and --trace).
    int const timed = options.iterations - options.warmup;
    bool const apart = backend.memory() == Memory::device;
    for (int i = 0; i < options.iterations + (apart ? timed : 0); ++i) {
        bool const timed_step = i >= options.warmup && i < options.iterations;
        bool const recorded = apart ? i >= options.iterations : timed_step;
        // A recorded step's spans: the trace file records them (it holds the recorded steps), or a recorder of the
        // step's own.
        std::optional<TraceRecorder> step_spans;
        if (recorded && trace) trace->start_recording();
        if (recorded && !trace) step_spans.emplace(TraceFile::max_events_per_rank);
        std::size_t const first_event = trace ? trace->events().size() : 0;
        Stopwatch watch;
        {
            TraceSpan const step_span(TraceTrack::steps, [&] { return fmt::format("step {}", i); });
            train_step(model, optimizer, passes, 1e-4f);
        }
        double const seconds = watch.seconds();
        std::vector<CollectiveRecord> const calls = grid.traffic().take_calls();
        CommunicationTime const step = communication_time(calls);
        if (recorded) {
            if (trace) {
                trace->stop_recording();
                trace->add_calls(calls);
            }
            std::vector<TraceEvent> const& events = trace ? trace->events() : step_spans->events();
            // A step whose spans did not all fit is left out of the breakdown, not counted short.
            if (!(trace ? trace->truncated() : step_spans->truncated())) {
                breakdown.add_step(std::span(events).subspan(first_event), step.waited_s, seconds);
            }
        }
        if (!timed_step) continue;
        timed_step_s.push_back(seconds);
        communication.busy_s += step.busy_s;
        communication.waited_s += step.waited_s;
    }
    // A step lasts as long as its slowest rank (the collectives join them); summed outside the timed steps.
    grid.comm(Group::world).all_reduce_max(timed_step_s.data(), timed_step_s.size());
    BenchResult result{};
    result.precision = options.run.model.precision;
    result.vocab_split = model.architecture().vocab_split;
    result.gemm_tunings = backend.gemm_tunings();
    result.step_s = std::accumulate(timed_step_s.begin(), timed_step_s.end(), 0.0) / timed;
    result.fastest_step_s = *std::min_element(timed_step_s.begin(), timed_step_s.end());
    result.slowest_step_s = *std::max_element(timed_step_s.begin(), timed_step_s.end());
    result.comm_s = communication.busy_s / timed;
    result.comm_exposed_s = communication.waited_s / timed;
    result.comm_hidden_fraction = communication.hidden_fraction();
    result.tokens_per_s = B * T / result.step_s;
    result.model_flops_per_s = architecture.model_flops_per_token(T) * result.tokens_per_s;
    GemmRateMeasurement const gemm_rate_after = backend.measure_gemm_rate();
    // A core's rate counts once per core the ranks run on; a GPU's once per rank (one GPU each).
    int const units = gemm_rate_before.per_core ? options.threads * world : world;
    result.gemm_flops_per_s = std::max(gemm_rate_before.flops_per_s, gemm_rate_after.flops_per_s) * units;
    result.mfu = result.model_flops_per_s / result.gemm_flops_per_s;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    result.peak_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
    result.tensor_peak_bytes = tensor_bytes_peak() - tensor_bytes_before;
    result.breakdown = breakdown.mean();
    result.breakdown_steps_apart = apart;
    if (trace) trace->write();
    return result;
}

}  // namespace axonn
