// The JSON-lines metrics file: one object per training step, handed to the operating system as it is written so
// that a crashed or interrupted run keeps every step it finished, and a plotting script can tail the file while
// training runs. The file belongs to one run (an exclusive lock; an earlier run's file is refused unless
// `overwrite`), and a write that fails (a full disk) ends the run with an error.
#pragma once

#include "axonn/core/file_io.h"
#include "axonn/train/run_lineage.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace axonn {

// Where a resumed run takes up its metrics: the step it resumes at, whether it validates there itself, and the
// launches that computed the steps before it (the resumed checkpoint's lineage): a record of an earlier step that
// another launch wrote is of steps rolled back, and goes with the later ones.
struct MetricsResume {
    std::int64_t step = 0;
    bool validates_at_step = false;
    RunLineage lineage;
    // Resumed from a checkpoint a rollback set aside: the copy of the metrics file made then, which holds that
    // branch's records of the steps the file now lacks (empty where there is none).
    std::filesystem::path branch_records = {};
};

// What a run resumed at `resume` may do with the metrics file at `path`, read once, each refusal an axonn::Error
// naming the line and the fix:
// - it continues the file of its own run and no other: an existing file must hold only records (JSON objects with
//   an integer "step") of run `run_id` ("" for a run from before runs had ids: records without one); a torn last
//   line, which a crash mid-write leaves, and blank lines do not count. Another run's records, or a file that is
//   not a metrics file, are refused unless `overwrite` (which replaces that file);
// - it cuts its own file after the records it keeps: a record it keeps that follows one it drops (a later step's
//   record before an earlier one's, or the resume step's training record before its closing validation), which
//   the cut would lose, is refused, `overwrite` or not; so is a record it keeps that repeats another's step (two
//   training records, or two closing validations, of one step).
void require_resumable_metrics_file(std::filesystem::path const& path, std::string const& run_id,
                                    MetricsResume const& resume, bool overwrite);

// The steps whose computation records of run `run_id` in the metrics file `path` are of a branch a rollback
// abandoned (left there because the rollback was not given the file to cut; abandoned_by), which the run resumed
// `from` cuts (a closing validation counts for the step before its own). Nothing where there are none.
std::optional<StepSpan> abandoned_records(std::filesystem::path const& path, std::string const& run_id,
                                          ResumedFrom const& from);

class MetricsLog {
public:
    MetricsLog() = default;  // writes nothing
    // Every record carries "run": run_id and "launch": the launch's id (each unless empty). resume: a resumed run
    // continues the log of the run it resumes (checked by the caller with require_resumable_metrics_file;
    // `overwrite` replaces a file holding another run's records but never a resumed run's own). The records of the
    // steps before it stay (those of its lineage's launches); later ones, which the interrupted run wrote after its
    // last checkpoint and this run computes again, go (the file is cut in place). The closing validation record of
    // the resume step itself (an earlier launch's last one) stays unless this run validates there again.
    MetricsLog(std::filesystem::path const& path, std::string run_id, std::string launch, bool overwrite,
               std::optional<MetricsResume> resume = {});

    void write(nlohmann::json record);
    // What a continued file lost or lacks, a line each, empty where nothing: the training records cut from the
    // resume step on (which this run computes again), and kept records that miss steps, between them or before the
    // resume step (cut by hand, or written by a launch without --metrics).
    std::string const& notes() const { return notes_; }

private:
    ExclusiveOutputFile out_;
    std::string notes_;
    std::string run_id_;
    std::string launch_;
};

}  // namespace axonn
