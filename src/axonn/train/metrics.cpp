#include "axonn/train/metrics.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

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

bool is_record_of(nlohmann::json const& record, std::string const& run_id) {
    if (!record.is_object() || !record.contains("step") || !record["step"].is_number_integer()) return false;
    nlohmann::json const run = record.value("run", nlohmann::json(""));
    return run.is_string() && run.get<std::string>() == run_id;
}

// Whether a resumed run keeps `record` of its own run: an earlier step's, or the resume step's closing validation
// (a record without a training loss) when the resumed run does not measure it again.
bool kept_on_resume(nlohmann::json const& record, MetricsResume const& resume) {
    std::int64_t const step = record["step"].get<std::int64_t>();
    bool const closing_validation = record.contains("val_loss") && !record.contains("loss");
    return step < resume.step || (step == resume.step && closing_validation && !resume.validates_at_step);
}

std::string describe_line(nlohmann::json const& record) {
    if (record.is_discarded() || !record.is_object() || !record.contains("step")) return "is not a metrics record";
    nlohmann::json const run = record.value("run", nlohmann::json(""));
    if (run == nlohmann::json("")) return "is a record of a run without an id";
    return fmt::format("is a record of run {}", run.is_string() ? run.get<std::string>() : run.dump());
}

}  // namespace

// The first line of `file` that is no record of the run `run_id` (a torn last line is none), or nullopt.
std::optional<std::size_t> first_foreign_line(MetricsFile const& file, std::string const& run_id) {
    for (std::size_t i = 0; i < file.lines.size(); ++i) {
        bool const torn = file.torn_end && i + 1 == file.lines.size();
        if (!torn && !is_record_of(file.lines[i].record, run_id)) return i;
    }
    return std::nullopt;
}

void require_own_metrics_file(std::filesystem::path const& path, std::string const& run_id) {
    MetricsFile const file = read_metrics_file(path);
    if (auto const i = first_foreign_line(file, run_id)) {
        fail("metrics file {} line {} {}, not of this run ({}): a resumed run appends to its own metrics file "
             "only; name another --metrics path, or pass --overwrite to replace the file",
             path.string(), *i + 1, describe_line(file.lines[*i].record),
             run_id.empty() ? "a run without an id" : "run " + run_id);
    }
}

MetricsLog::MetricsLog(std::filesystem::path const& path, std::string run_id, bool overwrite,
                       std::optional<MetricsResume> resume)
    : run_id_(std::move(run_id)) {
    // A resumed run continues its own records, --overwrite or not (which replaces another run's file).
    MetricsFile const file = resume ? read_metrics_file(path) : MetricsFile{};
    bool const continues = resume && !first_foreign_line(file, run_id_);
    if (continues) {
        // Rewritten whole (atomically), so a crash leaves the old file or this one.
        if (!file.lines.empty()) {
            std::string kept;  // a torn last line is no record, and goes
            for (MetricsLine const& line : file.lines) {
                if (is_record_of(line.record, run_id_) && kept_on_resume(line.record, *resume)) {
                    kept += line.text + '\n';
                }
            }
            write_file_atomically(path, kept, "metrics file");
        }
    }
    out_ = ExclusiveOutputFile(path, "metrics file",
                               continues   ? ExistingOutput::append
                               : overwrite ? ExistingOutput::overwrite
                                           : ExistingOutput::refuse);
}

void MetricsLog::write(nlohmann::json record) {
    if (!out_.is_open()) return;
    if (!run_id_.empty()) record["run"] = run_id_;
    out_.write(record.dump() + '\n');
}

}  // namespace axonn
