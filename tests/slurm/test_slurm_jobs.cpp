// Whole `axonn train` jobs under Slurm (label slurm): the one-node cluster of scripts/local-slurm, which ctest starts
// before these tests and stops after them (its configuration in SLURM_CONF). gpt2-micro on the shared byte data:
//   - SrunTrainsAsMpirunDoes: `srun --mpi=pmix -n 4` on data=1,z=1,y=2,x=2 gives mpirun's losses bit for bit, and
//     the banner's placement names SLURM_LOCALID under srun, OMPI_COMM_WORLD_LOCAL_RANK under mpirun, and the
//     ranks where a job script's own SLURM_LOCALID disagrees with the node's ranks.
//   - TheClusterScriptRequeuesItselfUntilTheRunIsDone: examples/slurm/train.sbatch, the script docs/CLUSTERS.md
//     shows, submitted as written (sizes, the time limit and the signal's lead on the sbatch command line; paths in
//     its variables) with a one-minute limit: the time limit's SIGUSR1 stops it with a checkpoint and status 75, it
//     requeues itself, resumes, and its losses and final checkpoint are bitwise those of a run never stopped.
//   - ASignalAtAnyMomentEndsInACheckpoint: `scancel --signal=TERM` or `USR1` the moment every task exists (before
//     any has reached main), while a resumed run reads its checkpoint, in the middle of a save, between two steps,
//     and during the closing validation: each ends in status 75 with the newest checkpoint complete (the one it
//     resumed from, when nothing was trained), and `--resume latest` then finishes the run bitwise.
// A save or a read is caught in the act by support/kill_at_file_operation.cpp (AXONN_STOP_AT): a rank stops itself
// at its first open of a checkpoint file (to read it, or to write it: NAME.safetensors.partial), the test signals
// the job and lets the rank go on.
#include "jobs/job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::BackgroundJob;
using testing::expect_same_checkpoint_data;
using testing::file_bytes;
using testing::JobResult;
using testing::lines_of;
using testing::step_results;

// What a shell command printed on standard output.
std::string output_of(std::string const& command) {
    std::string text;
    std::FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return text;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
    ::pclose(pipe);
    return text;
}

// One field of `scontrol show job -o` ("JobState", "Reason", "Restarts").
std::string job_field(std::string const& record, std::string const& name) {
    std::smatch match;
    if (!std::regex_search(record, match, std::regex("(^| )" + name + "=([^ \n]*)"))) return "";
    return match[2];
}

// Whether process `pid` is stopped (state T in /proc/PID/stat).
bool stopped(pid_t pid) {
    std::string const stat = file_bytes("/proc/" + std::to_string(pid) + "/stat");
    std::size_t const end = stat.rfind(')');
    return end != std::string::npos && end + 2 < stat.size() && stat[end + 2] == 'T';
}

constexpr char const* grid4 = "--grid data=1,z=1,y=2,x=2 ";

class SlurmJobs : public testing::JobTest {
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

TEST_F(SlurmJobs, SrunTrainsAsMpirunDoes) {
    std::string const options = std::string(grid4) + "--steps 6 --eval-every 3 --eval-batches 1 --metrics ";
    JobResult const launched = mpirun("-np 4 " + train(options + (dir_ / "mpirun.jsonl").string()));
    ASSERT_EQ(launched.exit_status, 0) << launched.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt")
                  .find("placement 1 node(s) x 4 rank(s), node-local ranks from "
                        "OMPI_COMM_WORLD_LOCAL_RANK\n"),
              std::string::npos)
        << file_bytes(dir_ / "stdout.txt");
    JobResult const srun_run = srun(4, "srun", train(options + (dir_ / "srun.jsonl").string()));
    ASSERT_EQ(srun_run.exit_status, 0) << srun_run.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "srun.out")
                  .find("placement 1 node(s) x 4 rank(s), node-local ranks from "
                        "SLURM_LOCALID\n"),
              std::string::npos)
        << file_bytes(dir_ / "srun.out");
    std::map<int, std::string> const expected = step_results(dir_ / "mpirun.jsonl");
    EXPECT_EQ(expected.size(), 6u);
    EXPECT_EQ(step_results(dir_ / "srun.jsonl"), expected);

    // A job script that sets SLURM_LOCALID itself (every task 0): a GPU run would put both ranks on one GPU.
    JobResult const overridden =
        srun(2, "overridden", "env SLURM_LOCALID=0 " + train("--grid data=2,z=1,y=1,x=1 --steps 1"));
    ASSERT_EQ(overridden.exit_status, 0) << overridden.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "overridden.out").find("node-local ranks from SLURM_LOCALID (wrong on 1 rank(s)"),
              std::string::npos)
        << file_bytes(dir_ / "overridden.out");
}

TEST_F(SlurmJobs, TheClusterScriptRequeuesItselfUntilTheRunIsDone) {
    fs::path const script = fs::path(AXONN_SOURCE_DIR) / "examples" / "slurm" / "train.sbatch";
    ASSERT_NE(file_bytes(fs::path(AXONN_SOURCE_DIR) / "docs" / "CLUSTERS.md").find(file_bytes(script)),
              std::string::npos)
        << "docs/CLUSTERS.md must show " << script << " as it is";
    // About 70 s of training on 2 cores: more than the one-minute limit, so the time limit's signal comes first.
    fs::path const config = dir_ / "run.toml";
    std::ofstream(config) << "model = \"gpt2-micro\"\ntokenizer = \"byte\"\ndata = \"" << (dir_ / "data").string()
                          << "\"\nsteps = 400\nbatch = 8\nseq = 64\nckpt-every = 100\neval-every = 100\n"
                             "eval-batches = 1\nsample-tokens = 0\ngemm-tuning = \"off\"\n";
    std::string const grid = "data=1,z=1,y=2,x=2";
    fs::path const reference = dir_ / "reference";
    JobResult const uninterrupted =
        mpirun("-np 4 " + axonn() + " train --config " + config.string() + " --grid " + grid + " --ckpt-dir " +
                   (reference / "ckpt").string() + " --metrics " + (reference / "metrics.jsonl").string(),
               time_limit(600));
    ASSERT_EQ(uninterrupted.exit_status, 0) << uninterrupted.stderr_text;

    fs::path const run = dir_ / "requeued";
    std::string const submit = "AXONN=" + axonn() + " CONFIG=" + config.string() + " RUN_DIR=" + run.string() +
                               " GRID=" + grid +
                               " sbatch --parsable --nodes=1 --ntasks-per-node=4 --overcommit --time=1 "
                               "--signal=USR1@40 --output=" +
                               (dir_ / "sbatch-%j.log").string() + " " + script.string();
    std::string id = output_of(submit);  // --parsable: the job id and a newline
    id.erase(std::find_if_not(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }), id.end());
    ASSERT_FALSE(id.empty()) << "sbatch refused the script";
    std::string record, state;
    for (auto start = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - start < 10min;) {
        record = output_of("scontrol show job -o " + id);
        state = job_field(record, "JobState");
        if (state != "PENDING" && state != "RUNNING" && state != "REQUEUED" && state != "COMPLETING") break;
        // Slurm holds a requeued job for two minutes before it may start again: the test does not wait for that.
        if (state == "PENDING" && job_field(record, "Reason") == "BeginTime") {
            std::system(("scontrol update JobId=" + id + " StartTime=now > /dev/null 2>&1").c_str());
        }
        std::this_thread::sleep_for(500ms);
    }
    std::string const log = file_bytes(dir_ / ("sbatch-" + id + ".log"));
    ASSERT_EQ(state, "COMPLETED") << record << "\n" << log;
    EXPECT_GE(std::stoi(job_field(record, "Restarts")), 1) << "never requeued:\n" << log;
    EXPECT_NE(log.find("stopped by SIGUSR1 after"), std::string::npos) << log;
    EXPECT_EQ(step_results(run / "metrics.jsonl"), step_results(reference / "metrics.jsonl"));
    expect_same_checkpoint_data(reference / "ckpt" / "step_00000400", run / "ckpt" / "step_00000400");
}

// Where a signal reaches a run.
enum class Moment { tasks_started, checkpoint_read, save, between_steps, closing_validation };

struct SignalCase {
    Moment moment;
    char const* name;
    char const* signal;
};

TEST_F(SlurmJobs, ASignalAtAnyMomentEndsInACheckpoint) {
    // 8 steps, a checkpoint every 4; the closing validation reads 30 batches, long enough to be signalled in.
    std::string const options =
        std::string(grid4) + "--steps 8 --ckpt-every 4 --eval-every 100 --eval-batches 30 --gemm-tuning off ";
    fs::path const reference = dir_ / "calm";
    JobResult const calm = srun(
        4, "calm", train(options + "--ckpt-dir " + reference.string() + " --metrics " + reference.string() + ".jsonl"));
    ASSERT_EQ(calm.exit_status, 0) << calm.stderr_text;
    std::map<int, std::string> const expected = step_results(reference.string() + ".jsonl");
    ASSERT_EQ(expected.size(), 8u);

    unsigned const seed = std::random_device{}();
    SCOPED_TRACE("the step between which the signal comes drawn with seed " + std::to_string(seed));
    int const between_steps = 1 + static_cast<int>(std::mt19937(seed)() % 6);
    for (SignalCase const& signalled : {
             SignalCase{Moment::tasks_started, "tasks_started", "TERM"},
             SignalCase{Moment::checkpoint_read, "checkpoint_read", "USR1"},
             SignalCase{Moment::save, "save", "TERM"},
             SignalCase{Moment::between_steps, "between_steps", "USR1"},
             SignalCase{Moment::closing_validation, "closing_validation", "TERM"},
         }) {
        SCOPED_TRACE(std::string("SIG") + signalled.signal + " at " + signalled.name);
        fs::path const ckpt = dir_ / signalled.name;
        fs::path const metrics = ckpt.string() + ".jsonl";
        fs::remove_all(ckpt);
        fs::remove(metrics);
        // A resumed run starts from the calm run's step 4: the checkpoint it reads when signalled.
        bool const resumes = signalled.moment == Moment::checkpoint_read;
        if (resumes) testing::fresh_ckpt_dir(reference / "step_00000004", ckpt, metrics);
        bool const caught_at_open = resumes || signalled.moment == Moment::save;
        std::string const command = train(options + "--ckpt-dir " + ckpt.string() + " --metrics " + metrics.string()) +
                                    (resumes ? " --resume latest" : "");
        std::string const name = std::string("signalled_") + signalled.name;
        {
            BackgroundJob job(srun_command(
                4, name, command,
                caught_at_open ? std::string("LD_PRELOAD=") + AXONN_KILL_AT_LIBRARY + ",AXONN_STOP_AT=open:" +
                                     (resumes ? ".safetensors" : ".safetensors.partial")  // a save's files
                               : ""));
            std::vector<pid_t> ranks;
            for (auto start = std::chrono::steady_clock::now(); ranks.size() < 4 && job.running();) {
                ranks = BackgroundJob::ranks(ckpt.string() + " --metrics");
                ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "the tasks did not start";
            }
            auto const any_stopped = [&] { return std::any_of(ranks.begin(), ranks.end(), stopped); };
            switch (signalled.moment) {
                case Moment::tasks_started:
                    break;
                case Moment::checkpoint_read:
                case Moment::save:
                    while (!any_stopped() && job.running()) std::this_thread::sleep_for(100us);
                    break;
                case Moment::between_steps:
                case Moment::closing_validation: {
                    int const records = signalled.moment == Moment::closing_validation ? 8 : between_steps;
                    while (static_cast<int>(step_results(metrics).size()) < records && job.running()) {
                        std::this_thread::sleep_for(200us);
                    }
                    break;
                }
            }
            if (caught_at_open) EXPECT_TRUE(any_stopped()) << "no rank reached a checkpoint file";
            std::system(("scancel --signal=" + std::string(signalled.signal) + " --name=" + name).c_str());
            // Let every rank go on, also one that stops at its own first open only after the signal.
            while (job.running()) {
                for (pid_t pid : ranks) ::kill(pid, SIGCONT);
                std::this_thread::sleep_for(1ms);
            }
            EXPECT_EQ(job.wait(), 75) << file_bytes(dir_ / (name + ".err"));
        }
        if (resumes) {
            std::vector<std::string> saved;
            for (auto const& entry : fs::directory_iterator(ckpt)) {
                if (entry.path().filename().string().starts_with("step_")) saved.push_back(entry.path().filename());
            }
            EXPECT_EQ(saved, std::vector<std::string>{"step_00000004"}) << "nothing was trained: no new checkpoint";
            expect_same_checkpoint_data(reference / "step_00000004", ckpt / "step_00000004");
        }
        JobResult const resumed = srun(4, name + "_resumed", command + (resumes ? "" : " --resume latest"));
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        std::map<int, std::string> results = step_results(metrics);
        std::map<int, std::string> wanted = expected;
        if (resumes) wanted.erase(wanted.begin(), wanted.find(4));
        EXPECT_EQ(results, wanted);
        expect_same_checkpoint_data(reference / "step_00000008", ckpt / "step_00000008");
    }
}

}  // namespace
}  // namespace axonn
