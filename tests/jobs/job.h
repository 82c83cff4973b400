// What the job tests share: a scratch folder with a small byte-token dataset, and `axonn train` launched under
// mpirun (several app contexts allowed, separated by ':'), timed, its stderr kept. `timeout` turns a hang into
// a failed test; a job in the background that a test watches, signals and kills. And what they read of a finished
// job: its metrics and its checkpoints' files.
#pragma once

#include "axonn/io/token_shard.h"
#include "support/files.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace axonn::testing {

// A job running in the background, which the test can watch and kill. It starts with SIGINT and SIGHUP at their
// default actions, as from an interactive shell, whatever the test runner left them at (ignored, say).
class BackgroundJob {
public:
    explicit BackgroundJob(std::string const& command) {
        std::string const shell = "exec " + command;
        char const* argv[] = {"/bin/sh", "-c", shell.c_str(), nullptr};
        posix_spawnattr_t attributes;
        posix_spawnattr_init(&attributes);
        sigset_t defaults;
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGINT);
        sigaddset(&defaults, SIGHUP);
        posix_spawnattr_setsigdefault(&attributes, &defaults);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
        EXPECT_EQ(posix_spawn(&pid_, "/bin/sh", nullptr, &attributes, const_cast<char**>(argv), environ), 0);
        posix_spawnattr_destroy(&attributes);
    }
    ~BackgroundJob() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            wait();
        }
    }

    // The pids of the job's ranks: the axonn processes whose command line holds `marker`.
    static std::vector<pid_t> ranks(std::string const& marker) {
        std::vector<pid_t> pids;
        std::string const command =
            "pgrep -f '^" + (std::filesystem::path(AXONN_BUILD_DIR) / "axonn").string() + " train .*" + marker + "'";
        std::FILE* pipe = ::popen(command.c_str(), "r");
        for (int pid = 0; pipe != nullptr && std::fscanf(pipe, "%d", &pid) == 1;) pids.push_back(pid);
        if (pipe != nullptr) ::pclose(pipe);
        return pids;
    }

    // Whether the job still runs; one that has ended is reaped here, and wait() returns its status.
    bool running() {
        if (pid_ <= 0) return false;
        if (::waitpid(pid_, &status_, WNOHANG) == 0) return true;
        pid_ = -1;
        return false;
    }

    // The job's exit status (128 + the signal that ended it), once it has ended.
    int wait() {
        if (pid_ > 0) ::waitpid(pid_, &status_, 0);
        pid_ = -1;
        return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
    }

private:
    pid_t pid_ = -1;
    int status_ = 0;
};

struct JobResult {
    int exit_status;
    std::string stderr_text;
    double seconds;
};

inline std::vector<std::string> lines_of(std::filesystem::path const& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The training records of a metrics file: step -> "loss grad_norm" as written (bitwise, through the text).
inline std::map<int, std::string> step_results(std::filesystem::path const& path) {
    std::map<int, std::string> results;
    for (std::string const& line : lines_of(path)) {
        auto const record = nlohmann::json::parse(line, nullptr, false);
        if (!record.contains("loss")) continue;
        results[record["step"].get<int>()] = record["loss"].dump() + " " + record["grad_norm"].dump();
    }
    return results;
}

// Whether process `pid` is stopped (state T in /proc/PID/stat).
inline bool stopped(pid_t pid) {
    std::string const stat = file_bytes("/proc/" + std::to_string(pid) + "/stat");
    std::size_t const end = stat.rfind(')');
    return end != std::string::npos && end + 2 < stat.size() && stat[end + 2] == 'T';
}

// ASAN_OPTIONS for a job whose ranks preload a library (support/kill_at_file_operation.cpp): AddressSanitizer
// (scripts/test --sanitize) refuses to start unless its runtime comes first in the library list, which LD_PRELOAD
// puts second, and then no rank of the job runs at all; the check goes, the rest stays.
inline std::string asan_options_with_preload() {
    char const* options = std::getenv("ASAN_OPTIONS");
    return (options != nullptr && *options != '\0' ? std::string(options) + ":" : std::string()) +
           "verify_asan_link_order=0";
}

// mpirun's options for a job one of whose ranks is killed on purpose. The others, left waiting on a peer that is
// gone, cannot end on the SIGTERM mpirun then sends them (their handler only asks for a save at the next step),
// so by default mpirun waits a second (odls_base_sigkill_timeout) before its SIGKILL: 2 s of each such job here.
inline constexpr char const* a_rank_killed = "--mca odls_base_sigkill_timeout 0 ";

// mpirun's options for a job whose ranks kill themselves at file operation `at` (support/kill_at_file_operation.cpp,
// preloaded), such as "rename:step_00000004".
inline std::string killed_at_file_operation(std::string const& at) {
    return std::string(a_rank_killed) + "-x LD_PRELOAD=" + AXONN_KILL_AT_LIBRARY + " -x AXONN_KILL_AT=" + at +
           " -x ASAN_OPTIONS=" + asan_options_with_preload() + " ";
}

// Every safetensors file of two checkpoints, compared byte for byte.
inline void expect_same_checkpoint_data(std::filesystem::path const& a, std::filesystem::path const& b) {
    std::size_t files = 0;
    for (auto const& entry : std::filesystem::directory_iterator(a)) {
        if (entry.path().extension() != ".safetensors") continue;
        ++files;
        EXPECT_TRUE(file_bytes(entry.path()) == file_bytes(b / entry.path().filename()))
            << entry.path().filename() << " differs between " << a << " and " << b;
    }
    EXPECT_GT(files, 0u) << a;
}

// A --ckpt-dir `folder` that holds only a copy of `checkpoint` (a step_N folder), and no metrics file `metrics`:
// where a resumed run starts as if that checkpoint were the last one saved.
inline void fresh_ckpt_dir(std::filesystem::path const& checkpoint, std::filesystem::path const& folder,
                           std::filesystem::path const& metrics) {
    std::filesystem::remove_all(folder);
    std::filesystem::remove(metrics);
    std::filesystem::create_directories(folder);
    std::filesystem::copy(checkpoint, folder / checkpoint.filename(), std::filesystem::copy_options::recursive);
}

class JobTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        set_job_environment();
        temp_dir_ = std::make_unique<TempDir>(::testing::UnitTest::GetInstance()->current_test_suite()->name());
        dir_ = temp_dir_->path();
        std::filesystem::create_directories(dir_ / "data");
        std::vector<std::int32_t> tokens(20000);
        for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 7 % 256);
        write_token_shard(dir_ / "data" / "train.bin", tokens, 16);  // raw ids: any tokenizer reads them
        write_token_shard(dir_ / "data" / "val.bin", tokens, 16);
    }
    static void TearDownTestSuite() { temp_dir_.reset(); }

    // The environment of every job the suite launches, AXONN_TEST_JOB_ENVIRONMENT's "NAME=VALUE" words
    // (tests/CMakeLists.txt), set here: ctest gives a discovered test the first variable of a list only.
    static void set_job_environment() {
        std::istringstream words(AXONN_TEST_JOB_ENVIRONMENT);
        for (std::string word; words >> word;) {
            std::size_t const equals = word.find('=');
            ASSERT_NE(equals, std::string::npos) << "AXONN_TEST_JOB_ENVIRONMENT holds " << word;
            ::setenv(word.substr(0, equals).c_str(), word.substr(equals + 1).c_str(), 1);
        }
    }

    static std::string axonn() { return (std::filesystem::path(AXONN_BUILD_DIR) / "axonn").string(); }

    // `axonn train` on the shared data, gpt2-micro, with `extra` options (a grid among them).
    static std::string train(std::string const& extra) {
        return axonn() + " train --model gpt2-micro --tokenizer byte --data " + (dir_ / "data").string() +
               " --sample-tokens 0 " + extra;
    }

    // A job's time limit (a hang must fail the test, not stall the suite): `seconds` times
    // $AXONN_TEST_TIMEOUT_SCALE, which the sanitizer build (scripts/test --sanitize) sets for its slower code.
    static int time_limit(int seconds) {
        char const* scale = std::getenv("AXONN_TEST_TIMEOUT_SCALE");
        return seconds * (scale != nullptr ? std::max(1, std::atoi(scale)) : 1);
    }

    static JobResult mpirun(std::string const& contexts, int timeout_seconds = 60) {
        std::filesystem::path const err = dir_ / "stderr.txt";
        std::string const command = "timeout " + std::to_string(time_limit(timeout_seconds)) + " mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1 " +
                                    contexts + " > " + (dir_ / "stdout.txt").string() + " 2> " + err.string();
        auto const start = std::chrono::steady_clock::now();
        int const status = std::system(command.c_str());
        double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::ifstream in(err);
        std::stringstream text;
        text << in.rdbuf();
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text.str(), seconds};
    }

    static inline std::unique_ptr<TempDir> temp_dir_;
    static inline std::filesystem::path dir_;
};

}  // namespace axonn::testing
