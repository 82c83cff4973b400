#include "axonn/train/metrics.h"

#include "axonn/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include <sys/stat.h>

namespace axonn {
namespace {

// A metrics file larger than this is not rewritten on resume: an error asks for another path.
constexpr std::uint64_t max_resumed_metrics_bytes = std::uint64_t{1} << 30;

// One line of a metrics file, parsed (a line that is not JSON: a discarded value).
struct MetricsLine {
    std::string text;
    nlohmann::json record;
};

// A metrics file's lines, and whether its last one lacks its newline (torn by a crash mid-write).
struct MetricsFile {
    std::vector<MetricsLine> lines;
    bool torn_end = false;
};

MetricsFile read_metrics_file(std::filesystem::path const& path) {
    MetricsFile file;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_size == 0) return file;
    std::string const text =
        read_input_file(path, "metrics file", "choose another --metrics path", max_resumed_metrics_bytes);
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) {
        nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        file.lines.push_back({line, std::move(record)});
    }
    file.torn_end = !text.empty() && text.back() != '\n';
    return file;
}

// A line of nothing but white space (an editor's empty last line): no record, and nobody's.
bool is_blank(std::string const& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// Whether `record` is a record as axonn writes them: an object with a step (a whole number from 0) and, where it
// names its launch, a launch id in a string.
bool is_well_formed(nlohmann::json const& record) {
    return record.is_object() && record.contains("step") && record["step"].is_number_integer() &&
           record["step"].get<std::int64_t>() >= 0 && (!record.contains("launch") || record["launch"].is_string());
}

bool is_record_of(nlohmann::json const& record, std::string const& run_id) {
    if (!is_well_formed(record)) return false;
    nlohmann::json const run = record.value("run", nlohmann::json(""));
    return run.is_string() && run.get<std::string>() == run_id;
}

// A record of a validation alone (no training loss), which measures the weights before its step.
bool is_closing_validation(nlohmann::json const& record) {
    return record.contains("val_loss") && !record.contains("loss");
}

// The step whose computation wrote `record`: its own, or for a validation alone the step before.
std::int64_t computed_step(nlohmann::json const& record) {
    std::int64_t const step = record["step"].get<std::int64_t>();
    return is_closing_validation(record) ? step - 1 : step;
}

// Whether the launch that wrote `record` computed its step of `lineage`.
bool of_lineage(nlohmann::json const& record, RunLineage const& lineage) {
    return of_lineage(lineage, computed_step(record), record.value("launch", nlohmann::json()));
}

// Whether a resumed run keeps `record` of its own run: an earlier step's, or the resume step's closing validation
// (a record without a training loss) when the resumed run does not measure it again; in both, written by the launch
// that computed its step of the resumed checkpoint (not by one whose steps were rolled back). A validation alone
// measures the weights before its step: the launch that computed the step before wrote it.
bool kept_on_resume(nlohmann::json const& record, MetricsResume const& resume) {
    std::int64_t const step = record["step"].get<std::int64_t>();
    bool const before = step < resume.step ||
                        (step == resume.step && is_closing_validation(record) && !resume.validates_at_step);
    return before && of_lineage(record, resume.lineage);
}

// The length of the records a resumed run keeps: those up to the first it computes again (the records of a run's
// own file are in the order of their steps). A cut in place, not a rewrite: a link to the file still names it, and
// the lock is held throughout.
std::uint64_t kept_bytes(MetricsFile const& file, std::string const& run_id, MetricsResume const& resume) {
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < file.lines.size(); ++i) {
        bool const torn = file.torn_end && i + 1 == file.lines.size();
        MetricsLine const& line = file.lines[i];
        bool const kept =
            is_blank(line.text) || (is_record_of(line.record, run_id) && kept_on_resume(line.record, resume));
        if (torn || !kept) break;
        bytes += line.text.size() + 1;
    }
    return bytes;
}

// The steps from the first training record (one with a loss) a resumed run keeps up to its resume step that no
// kept training record covers, as ranges ("2 to 4, 7"); "" where none is missing, or none is kept (a resumed run
// that adds --metrics).
std::string steps_without_record(MetricsFile const& file, std::string const& run_id, MetricsResume const& resume) {
    std::set<std::int64_t> steps;
    for (MetricsLine const& line : file.lines) {
        bool const training = is_record_of(line.record, run_id) && line.record.contains("loss");
        if (training && kept_on_resume(line.record, resume)) steps.insert(line.record["step"].get<std::int64_t>());
    }
    if (steps.empty()) return "";
    std::vector<std::string> gaps;
    auto const gap = [&gaps](std::int64_t from, std::int64_t to) {
        gaps.push_back(from == to ? fmt::format("{}", from) : fmt::format("{} to {}", from, to));
    };
    std::int64_t next = *steps.begin();
    for (std::int64_t const step : steps) {
        if (step > next) gap(next, step - 1);
        next = step + 1;
    }
    if (next < resume.step) gap(next, resume.step - 1);
    return fmt::format("{}", fmt::join(gaps, ", "));
}

// The steps of the run's training records after the first `kept` bytes, which a resumed run cuts, before the
// resumed step (another branch's: launches outside the resumed lineage) and from it on.
struct CutSteps {
    std::optional<StepSpan> other_branch;
    std::optional<StepSpan> computed_again;
};
CutSteps cut_training_steps(MetricsFile const& file, std::string const& run_id, std::uint64_t kept,
                            std::int64_t resume_step) {
    CutSteps cut;
    std::uint64_t offset = 0;
    for (MetricsLine const& line : file.lines) {
        if (offset >= kept && is_record_of(line.record, run_id) && line.record.contains("loss")) {
            std::int64_t const step = line.record["step"].get<std::int64_t>();
            widen(step < resume_step ? cut.other_branch : cut.computed_again, step);
        }
        offset += line.text.size() + 1;
    }
    return cut;
}

// "step 4" or "steps 2 to 5".
std::string named_steps(StepSpan span) {
    return span.first == span.last ? fmt::format("step {}", span.first)
                                   : fmt::format("steps {} to {}", span.first, span.last);
}

std::string describe_line(nlohmann::json const& record) {
    if (record.is_discarded() || !record.is_object() || !record.contains("step")) return "is not a metrics record";
    if (!is_well_formed(record)) {
        return fmt::format("is not a metrics record as axonn writes them (its step {}{})", record["step"].dump(),
                           record.contains("launch") ? ", its launch " + record["launch"].dump() : "");
    }
    nlohmann::json const run = record.value("run", nlohmann::json(""));
    if (run == nlohmann::json("")) return "is a record of a run without an id";
    return fmt::format("is a record of run {}", run.is_string() ? run.get<std::string>() : run.dump());
}

}  // namespace

// The first line of `file` that is no record of the run `run_id` (a torn last line is none), or nullopt.
std::optional<std::size_t> first_foreign_line(MetricsFile const& file, std::string const& run_id) {
    for (std::size_t i = 0; i < file.lines.size(); ++i) {
        bool const torn = file.torn_end && i + 1 == file.lines.size();
        if (!torn && !is_blank(file.lines[i].text) && !is_record_of(file.lines[i].record, run_id)) return i;
    }
    return std::nullopt;
}

// The first line of a run's own file that a resumed run keeps after one it does not (a record of a later step
// before one of an earlier step: a file axonn did not write so), with the line it follows, or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> kept_after_dropped(MetricsFile const& file,
                                                                      std::string const& run_id,
                                                                      MetricsResume const& resume) {
    std::optional<std::size_t> dropped;
    for (std::size_t i = 0; i < file.lines.size(); ++i) {
        MetricsLine const& line = file.lines[i];
        if (is_blank(line.text) || !is_record_of(line.record, run_id)) continue;
        bool const kept = kept_on_resume(line.record, resume);
        if (!kept && !dropped) dropped = i;
        if (kept && dropped) return std::pair{*dropped, i};
    }
    return std::nullopt;
}

// The first record a resumed run keeps that repeats an earlier kept one's step (two training records, or two
// closing validations, of one step: axonn writes one of each at most), with the line it repeats, or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> repeated_kept_record(MetricsFile const& file,
                                                                        std::string const& run_id,
                                                                        MetricsResume const& resume) {
    std::map<std::pair<std::int64_t, bool>, std::size_t> first_line_of;  // (step, closing validation) -> line
    for (std::size_t i = 0; i < file.lines.size(); ++i) {
        nlohmann::json const& record = file.lines[i].record;
        if (is_blank(file.lines[i].text) || !is_record_of(record, run_id) || !kept_on_resume(record, resume)) continue;
        auto const [seen, first] =
            first_line_of.try_emplace({record["step"].get<std::int64_t>(), is_closing_validation(record)}, i);
        if (!first) return std::pair{seen->second, i};
    }
    return std::nullopt;
}

std::optional<StepSpan> abandoned_records(std::filesystem::path const& path, std::string const& run_id,
                                          ResumedFrom const& from) {
    MetricsFile const file = read_metrics_file(path);
    std::optional<StepSpan> steps;
    for (std::size_t i = 0; i < file.lines.size(); ++i) {
        bool const torn = file.torn_end && i + 1 == file.lines.size();
        nlohmann::json const& record = file.lines[i].record;
        // The resume step's own validation measures the checkpoint's weights, whichever launch wrote it: one that
        // resumed there too (a finished run resumed again) computed no step of another branch.
        bool const resume_step_validation =
            is_closing_validation(record) && record["step"].get<std::int64_t>() == from.step;
        if (!torn && is_record_of(record, run_id) && !resume_step_validation &&
            abandoned_by(from, computed_step(record), record.value("launch", nlohmann::json()))) {
            widen(steps, computed_step(record));
        }
    }
    return steps;
}

void require_resumable_metrics_file(std::filesystem::path const& path, std::string const& run_id,
                                    MetricsResume const& resume, bool overwrite) {
    MetricsFile const file = read_metrics_file(path);
    if (auto const i = first_foreign_line(file, run_id)) {
        if (overwrite) return;  // another run's file, replaced
        std::string const run = run_id.empty() ? "a run without an id" : "run " + run_id;
        std::string const line = describe_line(file.lines[*i].record);
        auto const own = std::count_if(file.lines.begin(), file.lines.end(),
                                       [&](MetricsLine const& l) { return is_record_of(l.record, run_id); });
        // A line edited into the run's own file: repairing it keeps the rest, which --overwrite would not.
        std::string const repair =
            own == 0 ? std::string() : fmt::format("remove or repair line {} to continue the file, ", *i + 1);
        fail("metrics file {} line {} {}{}: a resumed run appends to its own metrics file only; {}name another "
             "--metrics path, or pass --overwrite to replace the whole file{}",
             path.string(), *i + 1, line, line.starts_with("is a record") ? ", not of this run (" + run + ")" : "",
             repair, own == 0 ? "" : fmt::format(" (its {} records of this run, {}, with it)", own, run));
    }
    if (auto const lines = kept_after_dropped(file, run_id, resume)) {
        auto const step = [&](std::size_t i) { return file.lines[i].record["step"].get<std::int64_t>(); };
        fail("metrics file {} line {} (step {}) comes before line {} (step {}): a resumed run keeps the records "
             "before step {} and cuts the file after them, which would lose line {}; put the lines in step order "
             "(axonn writes them so), or name another --metrics path",
             path.string(), lines->first + 1, step(lines->first), lines->second + 1, step(lines->second), resume.step,
             lines->second + 1);
    }
    if (auto const lines = repeated_kept_record(file, run_id, resume)) {
        fail("metrics file {} line {} repeats the {} of step {} on line {} (axonn writes one a step: a file edited by "
             "hand, or two joined); remove one of the two lines, or name another --metrics path",
             path.string(), lines->second + 1,
             is_closing_validation(file.lines[lines->first].record) ? "closing validation" : "training record",
             file.lines[lines->first].record["step"].get<std::int64_t>(), lines->first + 1);
    }
}

MetricsLog::MetricsLog(std::filesystem::path const& path, std::string run_id, std::string launch, bool overwrite,
                       std::optional<MetricsResume> resume)
    : run_id_(std::move(run_id)), launch_(std::move(launch)) {
    // A resumed run continues its own records, --overwrite or not (which replaces another run's file).
    MetricsFile const file = resume ? read_metrics_file(path) : MetricsFile{};
    bool const continues = resume && !first_foreign_line(file, run_id_);
    out_ = ExclusiveOutputFile(path, "metrics file",
                               continues   ? ExistingOutput::append
                               : overwrite ? ExistingOutput::overwrite
                                           : ExistingOutput::refuse);
    if (!continues) return;
    std::uint64_t const kept = kept_bytes(file, run_id_, *resume);
    out_.cut_to(kept);
    // Records cut without a word: a resume from a checkpoint copied from another folder, or one with later
    // checkpoints deleted, replaced a whole branch's records.
    CutSteps const cut = cut_training_steps(file, run_id_, kept, resume->step);
    if (cut.other_branch) {
        notes_ += fmt::format("  metrics file {}: its records of {}, another branch's (launches the checkpoint's "
                              "lineage does not name), are cut: this run does not compute those steps again\n",
                              path.string(), named_steps(*cut.other_branch));
    }
    if (cut.computed_again) {
        notes_ += fmt::format("  metrics file {}: its records of {}, from the checkpoint's step on, are cut: this run "
                              "computes those steps again\n",
                              path.string(), named_steps(*cut.computed_again));
    }
    // Each step writes a record: kept records with steps missing among them or before the resume step, which the
    // file would not show (a resume continued it silently).
    std::string const missing = steps_without_record(file, run_id_, *resume);
    if (!missing.empty()) {
        std::string const where =
            resume->branch_records.empty()
                ? std::string()
                : fmt::format("; the branch resumed was set aside by a rollback, and its records of those steps are "
                              "in {}, the copy made then",
                              resume->branch_records.string());
        bool const one = missing.find_first_of(", ") == std::string::npos;  // "2", not "2 to 4" or "2, 5"
        notes_ += fmt::format("  metrics file {} has no record of {} {} (cut from the file, lost to a write that "
                              "failed, or trained without --metrics); it goes on from step {}{}\n",
                              path.string(), one ? "step" : "steps", missing, resume->step, where);
    }
}

void MetricsLog::write(nlohmann::json record) {
    if (!out_.is_open()) return;
    if (!run_id_.empty()) record["run"] = run_id_;
    if (!launch_.empty()) record["launch"] = launch_;
    out_.write(record.dump() + '\n');
}

}  // namespace axonn
