// The JSON-lines metrics file: one object per training step, flushed as it is written so that a crashed or
// interrupted run keeps every step it finished, and a plotting script can tail the file while training runs.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace axonn {

class MetricsLog {
public:
    MetricsLog() = default;  // writes nothing
    explicit MetricsLog(std::filesystem::path const& path);

    void write(nlohmann::json const& record);

private:
    std::ofstream out_;
};

}  // namespace axonn
