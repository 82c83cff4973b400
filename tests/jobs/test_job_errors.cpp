// A failure on one rank ends the whole job, quickly, with that rank's message (comm/job_errors.h). Each test
// launches `axonn` under mpirun, with 4 ranks on the grid y=2, x=2, and injects a real failure on a chosen rank:
// its own environment (an MPMD launch, as when data is visible to one node only) or an output only rank 0
// writes. A failure that every rank sees alike prints one line. `timeout` turns a hang into a failed test.
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_job_errors {

namespace fs = std::filesystem;
using testing::JobResult;

// What the acceptance criteria allow a failing job from the first failure to its end, mpirun's start-up included.
constexpr double seconds_to_end = 10.0;

class JobErrors : public testing::JobTest {
protected:
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
};

TEST_F(JobErrors, AFailureOnOneChosenRankEndsTheJobWithThatRanksMessage) {
    // Rank 3 alone cannot find its tokenizer files; ranks 0-2 go on into the grid's collectives and would wait
    // for rank 3 forever.
    std::string const good = train("--grid data=1,z=1,y=2,x=2 --tokenizer gpt2 --steps 5");
    JobResult const result = mpirun("-np 3 " + good + " : -np 1 -x AXONN_GPT2_DIR=" + (dir_ / "nowhere").string() +
                                    " " + good);
    std::string const error = only_error(result, 1);
    EXPECT_EQ(error.rfind("[rank 3] axonn: error: GPT-2 tokenizer file " + (dir_ / "nowhere").string(), 0), 0u)
        << error;
}

// Ranks given other command lines (an MPMD launch) built other schedules, models or grids and hung in each other's
// collectives (--steps 5 against 6) or crashed (--seq 32 against 16 on y=2: a double free); each rank's config
// file counts as its arguments.
TEST_F(JobErrors, RanksGivenOtherArgumentsAreRefusedBeforeAnyWork) {
    std::string const common = train("--grid data=1,z=1,y=2,x=1 --steps 5");
    std::string const refusal = "axonn: error: rank 1 was given other arguments than rank 0 (options, or values in "
                                "its --config files): every rank of a job takes the same command line; check the "
                                "mpirun or srun command";
    EXPECT_EQ(only_error(mpirun("-np 1 " + common + " : -np 1 " + common + " --steps 6"), 2), refusal);
    EXPECT_EQ(only_error(mpirun("-np 1 " + common + " --seq 32 : -np 1 " + common + " --seq 16"), 2), refusal);
    std::ofstream(dir_ / "rank0.toml") << "lr = 0.001\n";
    std::ofstream(dir_ / "rank1.toml") << "lr = 0.002\n";
    EXPECT_EQ(only_error(mpirun("-np 1 " + common + " --config " + (dir_ / "rank0.toml").string() + " : -np 1 " +
                                common + " --config " + (dir_ / "rank1.toml").string()),
                         2),
              refusal);
}

// Every rank writes its part of each checkpoint into the folder rank 0 made: ranks in other working directories
// (node-local storage alike) named another folder by the same relative --ckpt-dir, trained every step, and failed
// at the first save. Refused before the training.
TEST_F(JobErrors, ACheckpointFolderThatARankCannotSeeIsRefusedBeforeTraining) {
    fs::create_directories(dir_ / "node0");
    fs::create_directories(dir_ / "node1");
    std::string const run = train("--grid data=1,z=2,y=1,x=1 --steps 50 --ckpt-dir ck");
    JobResult const result = mpirun("-np 1 --wdir " + (dir_ / "node0").string() + " " + run + " : -np 1 --wdir " +
                                    (dir_ / "node1").string() + " " + run);
    EXPECT_EQ(only_error(result, 1), "axonn: error: rank 1 cannot write into --ckpt-dir ck, which rank 0 can: every "
                                     "rank writes its part of each checkpoint there, so it must be one folder all "
                                     "ranks share (give an absolute path on a shared file system)");
    EXPECT_EQ(result.stderr_text.find(" loss "), std::string::npos) << "it trained: " << result.stderr_text;
}

TEST_F(JobErrors, AFailureOnRankZeroMidRunEndsTheJob) {
    // Only rank 0 writes the metrics, and the first write fails (a full disk) after the first step, while the
    // other ranks are already in the next step's collectives.
    JobResult const result = mpirun("-np 4 " + train("--grid data=1,z=1,y=2,x=2 --steps 50 --metrics /dev/full"));
    EXPECT_EQ(only_error(result, 1), "[rank 0] axonn: error: cannot write metrics file /dev/full: the disk is full (its "
                                     "record of step 0 is missing); the run stops there, and without --ckpt-dir none "
                                     "of its training is kept");
}

// A run that keeps checkpoints does not lose its steps to a metrics file it cannot write (its --ckpt-dir on another,
// healthy disk): every rank saves the step it is at, then the job ends with the error, once, naming the checkpoint;
// it failed at once, with nothing saved. Its trace is written, as a stop signal's is (it was lost).
TEST_F(JobErrors, AMetricsFileThatCannotBeWrittenEndsTheRunAfterASave) {
    fs::path const ckpt = dir_ / "metrics_failed";
    fs::path const trace = dir_ / "metrics_failed.json";
    JobResult const result = mpirun("-np 4 " + train("--grid data=1,z=1,y=2,x=2 --steps 50 --metrics /dev/full "
                                                     "--ckpt-dir " + ckpt.string() + " --trace " + trace.string()));
    EXPECT_EQ(only_error(result, 1), "axonn: error: cannot write metrics file /dev/full: the disk is full (its record "
                                     "of step 0 is missing); the run is saved first, as checkpoint " +
                                         (ckpt / "step_00000001").string() +
                                         " (step 1): fix that, then continue with --resume latest");
    EXPECT_TRUE(fs::exists(ckpt / "step_00000001" / "COMPLETE"));
    nlohmann::json const spans = nlohmann::json::parse(testing::file_bytes(trace), nullptr, false);
    EXPECT_TRUE(spans.is_object() && spans.contains("traceEvents")) << testing::file_bytes(trace).substr(0, 200);
}

TEST_F(JobErrors, AFailureEveryRankSeesPrintsOnceWithoutARank) {
    JobResult const result = mpirun("-np 4 " + train("--grid data=1,z=1,y=2,x=2 --steps 0"));
    EXPECT_EQ(only_error(result, 2), "axonn: error: --steps must be at least 1, got 0");
}

TEST_F(JobErrors, AMetricsFileOfAnEarlierRunIsRefusedByEveryRankAlike) {
    std::ofstream(dir_ / "earlier.jsonl") << "{\"step\": 0}\n";
    JobResult const result = mpirun("-np 4 " + train("--grid data=1,z=1,y=2,x=2 --steps 5 --metrics " +
                                                     (dir_ / "earlier.jsonl").string()));
    std::string const error = only_error(result, 1);
    EXPECT_EQ(error.rfind("axonn: error: metrics file " + (dir_ / "earlier.jsonl").string() + " already exists", 0), 0u)
        << error;
}

TEST_F(JobErrors, PrepareRefusesSeveralRanksThatWouldWriteTheSameFiles) {
    std::ofstream(dir_ / "text.txt") << "Some text.\n";
    JobResult const result = mpirun("-np 2 " + axonn() + " prepare --input " +
                                    (dir_ / "text.txt").string() + " --out " + (dir_ / "prepared").string() +
                                    " --tokenizer byte");
    EXPECT_EQ(only_error(result, 2), "axonn: error: `axonn prepare` runs as one process, not 2: run it without mpirun "
                                     "or srun");
}

TEST_F(JobErrors, EveryRankRefusesTheCudaBackendOfABuildWithoutIt) {
#ifdef AXONN_CUDA_BUILD
    GTEST_SKIP() << "this build has the CUDA backend";
#endif
    JobResult const result = mpirun("-np 2 " + axonn() + " bench --model gpt2-micro --batch 2 --grid x=2 --backend cuda");
    EXPECT_EQ(only_error(result, 2), "axonn: error: unknown backend 'cuda': this build has 'cpu' (build with "
                                     "-DAXONN_CUDA=ON for 'cuda')");
}

TEST_F(JobErrors, PlanRefusesSeveralRanksThatWouldPrintTheSamePlan) {
    JobResult const result = mpirun("-np 2 " + axonn() + " plan --model gpt-5b --gpus 8 --batch 8");
    EXPECT_EQ(only_error(result, 2), "axonn: error: `axonn plan` runs as one process, not 2: run it without mpirun "
                                     "or srun");
}

TEST_F(JobErrors, GridAutoWithNoValidGridFailsOnEveryRankAlike) {
    // 3 ranks divide neither the 8 heads, the width of 64 nor the batch of 4: rank 0 plans, every rank learns.
    fs::copy_file(fs::path(AXONN_SOURCE_DIR) / "configs" / "machines" / "perlmutter.toml", dir_ / "local.toml",
                  fs::copy_options::overwrite_existing);
    JobResult const result = mpirun("-np 3 -x AXONN_MACHINES_DIR=" + dir_.string() + " " +
                                    axonn() + " train --model gpt2-micro "
                                    "--tokenizer byte --data " + (dir_ / "data").string() + " --grid auto");
    std::string const error = only_error(result, 2);
    EXPECT_EQ(error.rfind("axonn: error: --grid auto found no grid of 3 ranks", 0), 0u) << error;
}

}  // namespace test_job_errors
}  // namespace axonn
