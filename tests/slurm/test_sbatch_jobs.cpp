// examples/slurm/train.sbatch, the script docs/CLUSTERS.md shows, under the one-node Slurm (label slurm;
// slurm_jobs.h), submitted as written: only the sizes, the time limit and the signal's lead on sbatch's command line
// and the paths in its variables. slurmctld checks time limits every 30 s and sends the warning at the first check
// that finds the end within lead + 30 s, so it comes between lead + 30 and lead seconds before the limit (measured
// here: 22 s and 38 s into two-minute jobs with --signal=USR1@80). A lead of 80 s in a two-minute limit puts it 10 to
// 40 s into each launch: after the step's tasks exist. (With a lead of 100 s the check could fall in the tenth of a
// second before srun had started the task; Slurm then signalled no one, the warning was not sent again, and the run
// trained to its end unstopped: once in CI.) The run trains about 85 s on a quiet core (4,000 steps), more than
// 40 s on any machine seen, so its first launch is stopped by that SIGUSR1: it saves, exits 75, requeues itself,
// resumes from the checkpoint it saved (scripts/local-slurm lets a requeued job start again after 5 s, not Slurm's
// 120 s), and trains every remaining step once. One rank: the test leaves the machine's other core to the other
// tests. That a run stopped by Slurm's signal and resumed is bitwise the run never stopped is
// SlurmJobs.ASignalAtAnyMomentEndsInACheckpoint's check; an uninterrupted reference here would double this test's
// 85 s of training for no other check.
#include "slurm/slurm_jobs.h"

#include <fstream>
#include <numeric>
#include <regex>
#include <set>
#include <thread>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::file_bytes;

using SbatchJobs = testing::SlurmJobs;

TEST_F(SbatchJobs, TheClusterScriptRequeuesItselfUntilTheRunIsDone) {
    fs::path const script = fs::path(AXONN_SOURCE_DIR) / "examples" / "slurm" / "train.sbatch";
    ASSERT_NE(file_bytes(fs::path(AXONN_SOURCE_DIR) / "docs" / "CLUSTERS.md").find(file_bytes(script)),
              std::string::npos)
        << "docs/CLUSTERS.md must show " << script << " as it is";
    // About 85 s of training on one quiet core here (45 steps a second), 78 s on CI's faster one, 120 s under load.
    fs::path const config = dir_ / "run.toml";
    std::ofstream(config) << "model = \"gpt2-micro\"\ntokenizer = \"byte\"\ndata = \"" << (dir_ / "data").string()
                          << "\"\nsteps = 4000\nbatch = 32\nseq = 64\nckpt-every = 500\neval-every = 500\n"
                             "eval-batches = 1\nsample-tokens = 0\ngemm-tuning = \"off\"\n";
    std::string const grid = "data=1,z=1,y=1,x=1";
    fs::path const run = dir_ / "requeued";
    std::string const submit = "AXONN=" + axonn() + " CONFIG=" + config.string() + " RUN_DIR=" + run.string() +
                               " GRID=" + grid +
                               " sbatch --parsable --nodes=1 --ntasks-per-node=1 --time=2 --signal=USR1@80 --output=" +
                               (dir_ / "sbatch-%j.log").string() + " " + script.string();
    std::string id = testing::output_of(submit);  // --parsable: the job id and a newline
    id.erase(std::find_if_not(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }), id.end());
    ASSERT_FALSE(id.empty()) << "sbatch refused the script";
    // Until the job ends, requeued after each stop.
    std::set<std::string> const ended = {"COMPLETED",     "FAILED",    "CANCELLED", "TIMEOUT",  "NODE_FAIL",
                                         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",  "PREEMPTED"};
    std::string record, state;
    for (auto start = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - start < 10min;) {
        record = testing::output_of("scontrol show job -o " + id);
        state = testing::job_field(record, "JobState");
        if (ended.contains(state)) break;
        std::this_thread::sleep_for(500ms);
    }
    std::string const log = file_bytes(dir_ / ("sbatch-" + id + ".log"));
    ASSERT_EQ(state, "COMPLETED") << record << "\n" << log;
    EXPECT_GE(std::stoi(testing::job_field(record, "Restarts")), 1) << "never requeued:\n" << log;
    // The first launch's stop ("stopped by SIGUSR1 after S steps; checkpoint ...") and the next one's start from
    // that checkpoint ("resuming from .../step_0000000S at step S").
    std::smatch stop, resume;
    ASSERT_TRUE(std::regex_search(log, stop, std::regex("stopped by SIGUSR1 after ([0-9]+) steps"))) << log;
    ASSERT_TRUE(std::regex_search(log, resume, std::regex("resuming from \\S+ at step ([0-9]+)"))) << log;
    EXPECT_EQ(resume[1], stop[1]) << log;
    // Every step trained once (a resume cuts the records from its step on): one record of each of the steps
    // numbered 0 to 3,999, and the final checkpoint saved.
    std::vector<int> steps;
    for (std::string const& line : testing::lines_of(run / "metrics.jsonl")) {
        auto const record = nlohmann::json::parse(line, nullptr, false);
        if (record.contains("loss")) steps.push_back(record["step"].get<int>());
    }
    std::vector<int> every_step(4000);
    std::iota(every_step.begin(), every_step.end(), 0);
    EXPECT_EQ(steps, every_step);
    EXPECT_TRUE(fs::exists(run / "ckpt" / "step_00004000" / "index.json")) << log;
}

}  // namespace
}  // namespace axonn
