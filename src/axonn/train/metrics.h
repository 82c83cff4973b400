// The JSON-lines metrics file: one object per training step, handed to the operating system as it is written so
// that a crashed or interrupted run keeps every step it finished, and a plotting script can tail the file while
// training runs. The file belongs to one run (an exclusive lock; an earlier run's file is refused unless
// `overwrite`), and a write that fails (a full disk) ends the run with an error.
#pragma once

#include "axonn/core/file_io.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace axonn {

// A resumed run continues the metrics file of its own run and no other: an existing `path` must hold only records
// (JSON objects with an integer "step") of run `run_id` ("" for a run from before runs had ids: records without
// one); a torn last line, which a crash mid-write leaves, does not count. Anything else (another run's records, a
// file that is not a metrics file) is an axonn::Error naming the line, the run and the fix.
void require_own_metrics_file(std::filesystem::path const& path, std::string const& run_id);

// Where a resumed run takes up its metrics: the step it resumes at, and whether it validates there itself.
struct MetricsResume {
    std::int64_t step = 0;
    bool validates_at_step = false;
};

// A resumed run (at `resume`) cuts its own metrics file after the records it keeps: refuses, naming the lines, a
// file where a record it keeps follows one it drops (a later step's record before an earlier one's, or the resume
// step's training record before its closing validation), which the cut would lose. Another run's file passes.
void require_metrics_in_step_order(std::filesystem::path const& path, std::string const& run_id,
                                   MetricsResume const& resume);

class MetricsLog {
public:
    MetricsLog() = default;  // writes nothing
    // Every record carries "run": run_id (unless empty). resume: a resumed run continues the log of the run it
    // resumes (checked by the caller with require_own_metrics_file, unless `overwrite`, which replaces a file holding
    // another run's records but never a resumed run's own). The records of the steps before it stay; later ones,
    // which the interrupted run wrote after its last checkpoint and this run computes again, go (the file is cut in
    // place). The closing validation record of the resume step itself (an earlier launch's last one) stays unless
    // this run validates there again.
    MetricsLog(std::filesystem::path const& path, std::string run_id, bool overwrite,
               std::optional<MetricsResume> resume = {});

    void write(nlohmann::json record);

private:
    ExclusiveOutputFile out_;
    std::string run_id_;
};

}  // namespace axonn
