// The launches a training run's state comes from. Each launch of a run (its first, and each that resumed it) has an
// id of its own; a checkpoint records the launches its steps were computed by, each with the step it started at.
// A run rolled back to step S computes the steps from S again in another launch: records of the abandoned steps that
// a launch without --metrics or --trace left in those files (a rollback cuts only the files it is given) are told
// apart by their launch, and a later resume drops them, where it would have kept them as the run's own.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

struct Launch {
    std::int64_t from_step;  // the first step the launch computed
    std::string id;          // 16 hex digits
};

// Oldest first; the last is the launch that wrote the newest steps.
using RunLineage = std::vector<Launch>;

// The launch whose computation step `step` is in `lineage` (the last that started at or before it), or "" where no
// launch covers it (an empty lineage: a checkpoint from before lineages were recorded).
std::string launch_at(RunLineage const& lineage, std::int64_t step);

// Whether a record of step `step` written by launch `launch` (a JSON string, or absent for records from before
// launches were recorded) belongs to `lineage`: it does unless both say which launch, and they differ.
bool of_lineage(RunLineage const& lineage, std::int64_t step, nlohmann::json const& launch);

// A checkpoint that a rollback set aside (step_N.rolled-back-TIME): its step, and the launches that computed it.
struct SetAsideBranch {
    std::int64_t step;
    RunLineage lineage;
};

// Where a resume that is no rollback starts: the resumed checkpoint's step and lineage, and the checkpoints of later
// steps that rollbacks set aside in its --ckpt-dir.
struct ResumedFrom {
    std::int64_t step;
    RunLineage lineage;
    std::vector<SetAsideBranch> set_aside;
};

// Whether a record of the computation of step `step` by launch `launch` is of a branch that a rollback abandoned,
// which a resume would cut without a word: before the resumed step, one written by a launch outside the resumed
// lineage (a rollback not given the file left it there; the run does not compute that step again); from the
// resumed step on, one written by the launch that computed that step of a checkpoint set aside (a rollback that
// ended before its first save, so that no lineage records it; the run computes those steps again, with its own
// settings). Any other record from the resumed step on is of a launch that ended before its next save, which the
// run computes again as a resume after a crash does.
bool abandoned_by(ResumedFrom const& resumed, std::int64_t step, nlohmann::json const& launch);

// The first and the last of some steps, for a message ("steps 10 to 20").
struct StepSpan {
    std::int64_t first;
    std::int64_t last;
};
// `span` grown to take in `step` (made of it where empty).
void widen(std::optional<StepSpan>& span, std::int64_t step);

// Whether `id` is a run's or a launch's id as axonn writes them: 16 hex digits.
bool is_hex_id(nlohmann::json const& id);

nlohmann::json lineage_json(RunLineage const& lineage);
// The recorded lineage of a checkpoint of step `step` (its run state's "lineage"), or an empty one where it records
// none; `where` names the checkpoint for an error: a lineage that is not a list of {"from_step", "launch"} in step
// order, each launch 16 hex digits from a step no later than the checkpoint's, is damage.
RunLineage lineage_from_json(nlohmann::json const& run, std::int64_t step, std::string const& where);

}  // namespace axonn
