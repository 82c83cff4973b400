#include "axonn/train/metrics.h"

#include <sstream>
#include <string>
#include <sys/stat.h>

namespace axonn {
namespace {

// A metrics file larger than this is not rewritten on resume: an error asks for another path.
constexpr std::uint64_t max_resumed_metrics_bytes = std::uint64_t{1} << 30;

// Keeps the records of steps before `step`: rewritten whole (atomically), so a crash leaves the old file or this.
void drop_records_from(std::filesystem::path const& path, std::int64_t step) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_size == 0) return;
    std::istringstream lines(read_input_file(path, "metrics file", "choose another --metrics path",
                                             max_resumed_metrics_bytes));
    std::string kept;
    for (std::string line; std::getline(lines, line);) {
        auto const record = nlohmann::json::parse(line, nullptr, false);
        bool const earlier = record.is_object() && record.contains("step") && record["step"].is_number_integer() &&
                             record["step"].get<std::int64_t>() < step;
        if (earlier) kept += line + '\n';
    }
    write_file_atomically(path, kept, "metrics file");
}

}  // namespace

MetricsLog::MetricsLog(std::filesystem::path const& path, bool overwrite, std::optional<std::int64_t> resume_step) {
    if (resume_step && !overwrite) drop_records_from(path, *resume_step);
    out_ = ExclusiveOutputFile(path, "metrics file",
                               overwrite     ? ExistingOutput::overwrite
                               : resume_step ? ExistingOutput::append
                                             : ExistingOutput::refuse);
}

void MetricsLog::write(nlohmann::json const& record) {
    if (out_.is_open()) out_.write(record.dump() + '\n');
}

}  // namespace axonn
