#include "axonn/train/metrics.h"

#include "axonn/core/error.h"

namespace axonn {

MetricsLog::MetricsLog(std::filesystem::path const& path) {
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    out_.open(path, std::ios::trunc);
    require(out_.good(), "cannot write the metrics file {}: check that its folder is writable", path.string());
}

void MetricsLog::write(nlohmann::json const& record) {
    if (!out_.is_open()) return;
    out_ << record.dump() << '\n';
    out_.flush();
}

}  // namespace axonn
