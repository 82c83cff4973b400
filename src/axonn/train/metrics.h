// The JSON-lines metrics file: one object per training step, handed to the operating system as it is written so
// that a crashed or interrupted run keeps every step it finished, and a plotting script can tail the file while
// training runs. The file belongs to one run (an exclusive lock; an earlier run's file is refused unless
// `overwrite`), and a write that fails (a full disk) ends the run with an error.
#pragma once

#include "axonn/core/file_io.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace axonn {

class MetricsLog {
public:
    MetricsLog() = default;  // writes nothing
    MetricsLog(std::filesystem::path const& path, bool overwrite);

    void write(nlohmann::json const& record);

private:
    ExclusiveOutputFile out_;
};

}  // namespace axonn
