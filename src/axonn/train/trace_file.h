// `--trace FILE`: a Chrome trace (JSON that Perfetto and chrome://tracing open) of every rank's first steps.
// Each rank is a process ("rank 3: data 0, z 1, y 1, x 1") with these tracks:
//   steps and layers  a span per step, its forward and backward, and each layer (recomputation inside it)
//   kernels and waits every backend kernel, and every wait for a collective, as the rank ran them
//   comm <group>      each collective from its issue to its completion, on lanes of its group so that
//                     collectives in flight together lie side by side
// Rank 0 gathers the ranks' events at the end and writes the file; every rank checks first that it can be
// written, before any work starts. The file names the training run it traces: a resumed run continues its own
// trace (the earlier launches' events of the steps before its resume step kept, its own placed after them on the
// timeline), as it does its metrics. Each step's span names its launch (run_lineage.h).
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/file_io.h"
#include "axonn/core/trace.h"
#include "axonn/train/run_lineage.h"

#include <filesystem>
#include <optional>
#include <vector>

namespace axonn {

// The training run a trace is of (none for bench's).
struct TracedRun {
    std::string run_id;                       // recorded in the file ("": none)
    std::string launch;                       // recorded in each step's span ("": none)
    std::optional<std::int64_t> resume_step;  // a resumed run's: the run's trace is continued from this step
    RunLineage lineage;                       // the launches that computed the steps before it
};

class TraceFile {
public:
    // Collective over the grid. Throws axonn::Error when `path` cannot be written. (That it is none of a run's
    // inputs is the caller's to check first: the trainer's check_outputs.) With `run.resume_step`, a trace of that
    // run already at `path` is continued rather than replaced, less the events from the first span of a step this
    // run computes again (that step or a later one: rolled back, or cut short by a stop) or of a step the lineage
    // says another launch computed (rolled back by a launch without --trace). `existing`: what happens to a file
    // that appears at `path` while the run computes (one there now was checked and accepted: it is replaced).
    TraceFile(std::filesystem::path path, ProcessGrid& grid, ExistingDestination existing, TracedRun run = {});
    TraceFile(TraceFile const&) = delete;
    TraceFile& operator=(TraceFile const&) = delete;

    // The collectives of a traced step.
    void add_calls(std::vector<CollectiveRecord> const& calls);
    // Recording starts with the object; these pause and resume it (bench records its timed steps only).
    void stop_recording() { recorder_.pause(true); }
    void start_recording() { recorder_.pause(false); }
    // The spans recorded so far, and whether some were dropped (max_events_per_rank).
    std::vector<TraceEvent> const& events() const { return recorder_.events(); }
    bool truncated() const { return recorder_.truncated(); }
    // Collective: rank 0 writes the file of every rank's events.
    void write();

    static constexpr std::size_t max_events_per_rank = 50000;

private:
    std::string rank_events_json() const;

    // The events of the trace this one continues, then this run's (`events`) after them.
    std::string continued_events(std::string const& events) const;

    std::filesystem::path path_;
    ExistingDestination existing_;
    ProcessGrid& grid_;
    TracedRun run_;
    TraceRecorder recorder_;
    std::vector<CollectiveRecord> calls_;
};

// Whether `path` holds a trace of the training run `run_id` (told by the start of the file, which names the run).
bool is_trace_of_run(std::filesystem::path const& path, std::string const& run_id);
// Refuses, before the run, a trace of the run that its events cannot be read back from to be continued.
void require_continuable_trace(std::filesystem::path const& path);
// The steps whose spans in the trace `path` are of a branch a rollback abandoned (abandoned_by), which the run
// resumed `from` drops. Nothing where there are none.
std::optional<StepSpan> abandoned_steps(std::filesystem::path const& path, ResumedFrom const& from);

}  // namespace axonn
