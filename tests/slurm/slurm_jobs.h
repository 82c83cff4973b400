// What the tests under Slurm share (label slurm): the one-node cluster of scripts/local-slurm, which ctest starts
// before them and stops after them (its configuration in SLURM_CONF; without one they skip, saying how to start it),
// `srun` launches of `axonn`, and what they read of Slurm's answers.
#pragma once

#include "jobs/job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <string>

namespace axonn::testing {

namespace fs = std::filesystem;

// What a shell command printed on standard output.
inline std::string output_of(std::string const& command) {
    std::string text;
    std::FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return text;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
    ::pclose(pipe);
    return text;
}

// One field of `scontrol show job -o` ("JobState", "Reason", "Restarts").
inline std::string job_field(std::string const& record, std::string const& name) {
    std::smatch match;
    if (!std::regex_search(record, match, std::regex("(^| )" + name + "=([^ \n]*)"))) return "";
    return match[2];
}

// Whether `signal` waits, pending, for the process `pid` (a stopped process receives it when it continues).
inline bool signal_pending(pid_t pid, int signal) {
    std::string const status = file_bytes("/proc/" + std::to_string(pid) + "/status");
    std::size_t const field = status.find("ShdPnd:");
    if (field == std::string::npos) return false;
    std::uint64_t const pending = std::stoull(status.substr(field + 7), nullptr, 16);
    return (pending >> (signal - 1) & 1u) != 0;
}

inline void expect_printed(fs::path const& output, std::string const& text) {
    std::string const printed = file_bytes(output);
    EXPECT_NE(printed.find(text), std::string::npos) << output << " lacks \"" << text << "\":\n" << printed;
}

inline constexpr char const* grid4 = "--grid data=1,z=1,y=2,x=2 ";

class SlurmJobs : public JobTest {
protected:
    void SetUp() override {
        if (std::getenv("SLURM_CONF") == nullptr || std::system("sinfo --noheader > /dev/null 2>&1") != 0) {
            GTEST_SKIP() << "no Slurm: run `scripts/local-slurm start` and export the SLURM_CONF it prints";
        }
    }

    // `srun --mpi=pmix -n RANKS COMMAND` as its own job named `name`, with `environment` ("NAME=VALUE,...") added
    // to the tasks' environment; its output in dir_/name.out and .err.
    static std::string srun_command(int ranks, std::string const& name, std::string const& command,
                                    std::string const& environment = "") {
        fs::path const log = dir_ / name;
        return "timeout " + std::to_string(time_limit(120)) + " srun --mpi=pmix --overcommit -n " +
               std::to_string(ranks) + " --job-name=" + name + " --export=ALL,OMP_NUM_THREADS=1" +
               (environment.empty() ? "" : "," + environment) + " " + command + " > " + log.string() + ".out 2> " +
               log.string() + ".err";
    }

    static JobResult srun(int ranks, std::string const& name, std::string const& command) {
        auto const start = std::chrono::steady_clock::now();
        int const status = std::system(srun_command(ranks, name, command).c_str());
        double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), file_bytes(dir_ / (name + ".err")),
                seconds};
    }
};

}  // namespace axonn::testing
