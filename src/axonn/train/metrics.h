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

namespace axonn {

class MetricsLog {
public:
    MetricsLog() = default;  // writes nothing
    // resume_step: a resumed run continues the log of the run it resumes. The records of the steps before it stay;
    // later ones, which the interrupted run wrote after its last checkpoint and this run computes again, go.
    MetricsLog(std::filesystem::path const& path, bool overwrite, std::optional<std::int64_t> resume_step = {});

    void write(nlohmann::json const& record);

private:
    ExclusiveOutputFile out_;
};

}  // namespace axonn
