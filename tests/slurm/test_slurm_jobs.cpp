// Whole `axonn train` jobs under Slurm (label slurm; slurm_jobs.h): gpt2-micro on the shared byte data.
//   - SrunTrainsAsMpirunDoes: `srun --mpi=pmix -n 4` on data=1,z=1,y=2,x=2 gives mpirun's losses bit for bit, and
//     the banner's placement names SLURM_LOCALID under srun, OMPI_COMM_WORLD_LOCAL_RANK under mpirun, and the
//     ranks where a job script's own SLURM_LOCALID disagrees with the node's ranks.
//   - ASignalAtAnyMomentEndsInACheckpoint (2 ranks): `scancel --signal=TERM` or `USR1` the moment every task exists (before
//     any has reached main), while a resumed run reads its checkpoint, in the middle of a save, in the middle of a
//     save written in the background (--ckpt-async), between two steps, and during the closing validation: each
//     ends in status 75 with the newest checkpoint complete (the one it resumed from, when nothing was trained),
//     and `--resume latest` then finishes the run bitwise; a signal taken in the closing validation (not at the
//     boundary before it), with no closing sample left to run, finds the run finished: it ends with 0. Between
//     steps and in the validation the ranks are held (SIGSTOP) until the signal waits in each: the run is short,
//     and scancel's signal takes a while to arrive.
// A save or a read is caught in the act by support/kill_at_file_operation.cpp (AXONN_STOP_AT): a rank stops itself
// at its first open of a checkpoint file (to read it, or to write it: NAME.safetensors.partial), the test signals
// the job and lets the rank go on.
#include "slurm/slurm_jobs.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <iterator>
#include <chrono>
#include <random>
#include <thread>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::BackgroundJob;
using testing::expect_printed;
using testing::expect_same_checkpoint_data;
using testing::file_bytes;
using testing::grid4;
using testing::JobResult;
using testing::signal_pending;
using testing::SlurmJobs;
using testing::step_results;
using testing::stopped;

TEST_F(SlurmJobs, SrunTrainsAsMpirunDoes) {
    std::string const options = std::string(grid4) + "--steps 6 --eval-every 3 --eval-batches 1 --metrics ";
    JobResult const launched = mpirun("-np 4 " + train(options + (dir_ / "mpirun.jsonl").string()));
    ASSERT_EQ(launched.exit_status, 0) << launched.stderr_text;
    expect_printed(dir_ / "stdout.txt",
                   "placement 1 node(s) x 4 rank(s), node-local ranks from OMPI_COMM_WORLD_LOCAL_RANK\n");
    JobResult const srun_run = srun(4, "srun", train(options + (dir_ / "srun.jsonl").string()));
    ASSERT_EQ(srun_run.exit_status, 0) << srun_run.stderr_text;
    expect_printed(dir_ / "srun.out", "placement 1 node(s) x 4 rank(s), node-local ranks from SLURM_LOCALID\n");
    std::map<int, std::string> const expected = step_results(dir_ / "mpirun.jsonl");
    EXPECT_EQ(expected.size(), 6u);
    EXPECT_EQ(step_results(dir_ / "srun.jsonl"), expected);

    // A job script that sets SLURM_LOCALID itself (every task 0): a GPU run would put both ranks on one GPU.
    JobResult const overridden =
        srun(2, "overridden", "env SLURM_LOCALID=0 " + train("--grid data=2,z=1,y=1,x=1 --steps 1"));
    ASSERT_EQ(overridden.exit_status, 0) << overridden.stderr_text;
    expect_printed(dir_ / "overridden.out", "node-local ranks from SLURM_LOCALID (wrong on 1 rank(s)");
}

// Where a signal reaches a run.
enum class Moment { tasks_started, checkpoint_read, save, background_save, between_steps, closing_validation };

struct SignalCase {
    Moment moment;
    char const* name;
    char const* signal;
};

TEST_F(SlurmJobs, ASignalAtAnyMomentEndsInACheckpoint) {
    // On 2 ranks: 8 steps, a checkpoint every 4; the closing validation reads 30 batches, long enough to be
    // signalled in.
    std::string const options =
        "--grid data=1,z=1,y=2,x=1 --steps 8 --ckpt-every 4 --eval-every 100 --eval-batches 30 --gemm-tuning off ";
    fs::path const reference = dir_ / "calm";
    JobResult const calm = srun(
        2, "calm", train(options + "--ckpt-dir " + reference.string() + " --metrics " + reference.string() + ".jsonl"));
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
             SignalCase{Moment::background_save, "background_save", "USR1"},
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
        bool const in_background = signalled.moment == Moment::background_save;
        bool const caught_at_open = resumes || signalled.moment == Moment::save || in_background;
        std::string const command = train(options + (in_background ? "--ckpt-async " : "") + "--ckpt-dir " +
                                          ckpt.string() + " --metrics " + metrics.string()) +
                                    (resumes ? " --resume latest" : "");
        std::string const name = std::string("signalled_") + signalled.name;
        {
            BackgroundJob job(srun_command(
                2, name, command,
                caught_at_open ? std::string("LD_PRELOAD=") + AXONN_KILL_AT_LIBRARY + ",AXONN_STOP_AT=open:" +
                                     (resumes ? ".safetensors" : ".safetensors.partial")  // a save's files
                               : ""));
            std::vector<pid_t> ranks;
            for (auto start = std::chrono::steady_clock::now(); ranks.size() < 2 && job.running();) {
                ranks = BackgroundJob::ranks(ckpt.string() + " --metrics");
                ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "the tasks did not start";
            }
            auto const any_stopped = [&] { return std::any_of(ranks.begin(), ranks.end(), stopped); };
            switch (signalled.moment) {
                case Moment::tasks_started:
                    break;
                case Moment::checkpoint_read:
                case Moment::save:
                case Moment::background_save:
                    while (!any_stopped() && job.running()) std::this_thread::sleep_for(100us);
                    break;
                case Moment::between_steps:
                case Moment::closing_validation: {
                    int const records = signalled.moment == Moment::closing_validation ? 8 : between_steps;
                    while (static_cast<int>(step_results(metrics).size()) < records && job.running()) {
                        std::this_thread::sleep_for(200us);
                    }
                    for (pid_t pid : ranks) ::kill(pid, SIGSTOP);
                    break;
                }
            }
            if (caught_at_open) {
                EXPECT_TRUE(any_stopped()) << "no rank reached a checkpoint file";
            }
            // The ranks held now (every rank between steps; the one stopped at a checkpoint file otherwise) keep the
            // signal pending until they go on. scancel returns before slurmd delivers it: a run let go at once
            // could finish first (a background save's run did: exit 0), so the signal is waited for in them.
            std::vector<pid_t> held;
            std::copy_if(ranks.begin(), ranks.end(), std::back_inserter(held), stopped);
            std::system(("scancel --signal=" + std::string(signalled.signal) + " --name=" + name).c_str());
            if (signalled.moment != Moment::tasks_started) {
                int const number = std::string(signalled.signal) == "TERM" ? SIGTERM : SIGUSR1;
                auto const all_pending = [&] {
                    return std::all_of(held.begin(), held.end(),
                                       [&](pid_t pid) { return signal_pending(pid, number); });
                };
                for (auto start = std::chrono::steady_clock::now(); !all_pending() && job.running();) {
                    ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "scancel's signal never arrived";
                    std::this_thread::sleep_for(1ms);
                }
            }
            // Let every rank go on, also one that stops at its own first open only after the signal.
            while (job.running()) {
                for (pid_t pid : ranks) ::kill(pid, SIGCONT);
                std::this_thread::sleep_for(1ms);
            }
            int const status = job.wait();
            std::string const err = file_bytes(dir_ / (name + ".err"));
            if (signalled.moment == Moment::closing_validation) {
                // Held after the last step's record, the ranks take the signal at the last step's boundary, before
                // the closing validation, which the resumed run then runs (75), or in it, and then the run has
                // nothing left to do (no closing sample): finished (0). Which one depends on where SIGSTOP caught
                // them; each must say what it did.
                EXPECT_TRUE(status == 75 || status == 0) << err;
                EXPECT_EQ(err.find("stopped by") != std::string::npos, status == 75) << err;
            } else {
                EXPECT_EQ(status, 75) << err;
            }
        }
        if (resumes) {
            std::vector<std::string> saved;
            for (auto const& entry : fs::directory_iterator(ckpt)) {
                if (entry.path().filename().string().starts_with("step_")) saved.push_back(entry.path().filename());
            }
            EXPECT_EQ(saved, std::vector<std::string>{"step_00000004"}) << "nothing was trained: no new checkpoint";
            expect_same_checkpoint_data(reference / "step_00000004", ckpt / "step_00000004");
        }
        JobResult const resumed = srun(2, name + "_resumed", command + (resumes ? "" : " --resume latest"));
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
