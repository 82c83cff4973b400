// examples/slurm/train.sbatch, the script docs/CLUSTERS.md shows, under the one-node Slurm (label slurm;
// slurm_jobs.h), submitted as written: only the sizes, the time limit and the signal's lead on sbatch's command line
// and the paths in its variables. slurmctld checks time limits every 30 s and sends the warning at the first check
// that finds the end within lead + 30 s, so it comes between lead + 30 and lead seconds before the limit (measured
// here: 22 s and 38 s into two-minute jobs with --signal=USR1@80). A lead of 80 s in a two-minute limit puts it 10 to
// 40 s into each launch: after the step's tasks exist. (With a lead of 100 s the check could fall in the tenth of a
// second before srun had started the task; Slurm then signalled no one, the warning was not sent again, and the run
// trained to its end unstopped: once in CI.) The run trains about 85 s on a quiet core (4,000 steps), more than
// 40 s on any machine seen, so its first launch is stopped by that SIGUSR1: it saves, exits 75, requeues itself,
// resumes (scripts/local-slurm lets a requeued job start again after 5 s, not Slurm's 120 s), and its losses and
// final checkpoint are bitwise those of the same run never stopped. One rank: the test leaves the machine's other
// core to the other tests.
#include "slurm/slurm_jobs.h"

#include <fstream>
#include <set>
#include <thread>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::expect_same_checkpoint_data;
using testing::file_bytes;
using testing::JobResult;
using testing::step_results;

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
    fs::path const reference = dir_ / "reference";
    JobResult const uninterrupted =
        mpirun("-np 1 " + axonn() + " train --config " + config.string() + " --grid " + grid + " --ckpt-dir " +
                   (reference / "ckpt").string() + " --metrics " + (reference / "metrics.jsonl").string(),
               time_limit(600));
    ASSERT_EQ(uninterrupted.exit_status, 0) << uninterrupted.stderr_text;

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
    EXPECT_NE(log.find("stopped by SIGUSR1 after"), std::string::npos) << log;
    EXPECT_EQ(step_results(run / "metrics.jsonl"), step_results(reference / "metrics.jsonl"));
    expect_same_checkpoint_data(reference / "ckpt" / "step_00004000", run / "ckpt" / "step_00004000");
}

}  // namespace
}  // namespace axonn
