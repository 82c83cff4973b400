#include "axonn/train/metrics.h"

namespace axonn {

MetricsLog::MetricsLog(std::filesystem::path const& path, bool overwrite) : out_(path, "metrics file", overwrite) {}

void MetricsLog::write(nlohmann::json const& record) {
    if (out_.is_open()) out_.write(record.dump() + '\n');
}

}  // namespace axonn
