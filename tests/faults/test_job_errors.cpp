// A failure on one rank ends the whole job, quickly, with that rank's message (comm/job_errors.h). Each test
// launches `axonn` under mpirun, with 4 ranks on the grid y=2, x=2, and injects a real failure on a chosen rank:
// its own environment (an MPMD launch, as when data is visible to one node only) or an output only rank 0
// writes. A failure that every rank sees alike prints one line. `timeout` turns a hang into a failed test.
#include "support/temp_dir.h"

#include "axonn/io/token_shard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// What the acceptance criteria allow a failing job from the first failure to its end, mpirun's start-up included.
constexpr double seconds_to_end = 10.0;

struct JobResult {
    int exit_status;
    std::string stderr_text;
    double seconds;
};

class JobErrors : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        temp_dir_ = std::make_unique<testing::TempDir>("job_errors");
        dir_ = temp_dir_->path();
        fs::create_directories(dir_ / "data");
        std::vector<std::int32_t> tokens(20000);
        for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 7 % 256);
        write_token_shard(dir_ / "data" / "train.bin", tokens, 16);  // raw ids: any tokenizer reads them
        write_token_shard(dir_ / "data" / "val.bin", tokens, 16);
    }
    static void TearDownTestSuite() { temp_dir_.reset(); }

    // `axonn train` on the shared data, gpt2-micro, grid y=2, x=2, with `extra` options.
    static std::string train(std::string const& extra) {
        return (fs::path(AXONN_BUILD_DIR) / "axonn").string() + " train --model gpt2-micro --tokenizer byte --data " +
               (dir_ / "data").string() + " --grid data=1,z=1,y=2,x=2 --sample-tokens 0 " + extra;
    }

    // Runs `mpirun [options] PROGRAM...` (app contexts separated by ':'), timed.
    static JobResult mpirun(std::string const& contexts) {
        fs::path const err = dir_ / "stderr.txt";
        std::string const command = "timeout 60 mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1 " +
                                    contexts + " > " + (dir_ / "stdout.txt").string() + " 2> " + err.string();
        auto const start = std::chrono::steady_clock::now();
        int const status = std::system(command.c_str());
        double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::ifstream in(err);
        std::stringstream text;
        text << in.rdbuf();
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text.str(), seconds};
    }

    // Checks that the job ended in time with `status` and printed one error line, and returns that line.
    static std::string only_error(JobResult const& result, int status) {
        EXPECT_EQ(result.exit_status, status) << result.stderr_text;
        EXPECT_LT(result.seconds, seconds_to_end) << result.stderr_text;
        std::vector<std::string> lines;
        std::istringstream in(result.stderr_text);
        for (std::string line; std::getline(in, line);) {
            if (line.find("axonn: error:") != std::string::npos) lines.push_back(line);
        }
        EXPECT_EQ(lines.size(), 1u) << result.stderr_text;
        return lines.empty() ? "" : lines.front();
    }

    static inline std::unique_ptr<testing::TempDir> temp_dir_;
    static inline fs::path dir_;
};

TEST_F(JobErrors, AFailureOnOneChosenRankEndsTheJobWithThatRanksMessage) {
    // Rank 3 alone cannot find its tokenizer files; ranks 0-2 go on into the grid's collectives and would wait
    // for rank 3 forever.
    std::string const good = train("--tokenizer gpt2 --steps 5");
    JobResult const result = mpirun("-np 3 " + good + " : -np 1 -x AXONN_GPT2_DIR=" + (dir_ / "nowhere").string() +
                                    " " + good);
    std::string const error = only_error(result, 1);
    EXPECT_EQ(error.rfind("[rank 3] axonn: error: GPT-2 tokenizer file " + (dir_ / "nowhere").string(), 0), 0u)
        << error;
}

TEST_F(JobErrors, AFailureOnRankZeroMidRunEndsTheJob) {
    // Only rank 0 writes the metrics, and the first write fails (a full disk) after the first step, while the
    // other ranks are already in the next step's collectives.
    JobResult const result = mpirun("-np 4 " + train("--steps 50 --metrics /dev/full"));
    EXPECT_EQ(only_error(result, 1), "[rank 0] axonn: error: cannot write metrics file /dev/full: the disk is full");
}

TEST_F(JobErrors, AFailureEveryRankSeesPrintsOnceWithoutARank) {
    JobResult const result = mpirun("-np 4 " + train("--steps 0"));
    EXPECT_EQ(only_error(result, 2), "axonn: error: --steps must be at least 1, got 0");
}

TEST_F(JobErrors, AMetricsFileOfAnEarlierRunIsRefusedByEveryRankAlike) {
    std::ofstream(dir_ / "earlier.jsonl") << "{\"step\": 0}\n";
    JobResult const result = mpirun("-np 4 " + train("--steps 5 --metrics " + (dir_ / "earlier.jsonl").string()));
    std::string const error = only_error(result, 1);
    EXPECT_EQ(error.rfind("axonn: error: metrics file " + (dir_ / "earlier.jsonl").string() + " already exists", 0), 0u)
        << error;
}

TEST_F(JobErrors, PrepareRefusesSeveralRanksThatWouldWriteTheSameFiles) {
    std::ofstream(dir_ / "text.txt") << "Some text.\n";
    JobResult const result = mpirun("-np 2 " + (fs::path(AXONN_BUILD_DIR) / "axonn").string() + " prepare --input " +
                                    (dir_ / "text.txt").string() + " --out " + (dir_ / "prepared").string() +
                                    " --tokenizer byte");
    EXPECT_EQ(only_error(result, 2), "axonn: error: `axonn prepare` writes files and runs as one process, not 2: run "
                                     "it without mpirun or srun");
}

TEST_F(JobErrors, GridAutoWithNoValidGridFailsOnEveryRankAlike) {
    // 3 ranks divide neither the 8 heads, the width of 64 nor the batch of 4: rank 0 plans, every rank learns.
    fs::copy_file(fs::path(AXONN_SOURCE_DIR) / "configs" / "machines" / "perlmutter.toml", dir_ / "local.toml",
                  fs::copy_options::overwrite_existing);
    JobResult const result = mpirun("-np 3 -x AXONN_MACHINES_DIR=" + dir_.string() + " " +
                                    (fs::path(AXONN_BUILD_DIR) / "axonn").string() + " train --model gpt2-micro "
                                    "--tokenizer byte --data " + (dir_ / "data").string() + " --grid auto");
    std::string const error = only_error(result, 2);
    EXPECT_EQ(error.rfind("axonn: error: --grid auto found no grid of 3 ranks", 0), 0u) << error;
}

}  // namespace
}  // namespace axonn
