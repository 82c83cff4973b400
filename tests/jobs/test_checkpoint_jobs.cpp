// Checkpoints of whole `axonn train` jobs under mpirun (gpt2-micro on the shared byte data):
//   - KilledRunsResumeBitwise: a 4-rank run on data=1,z=2,y=1,x=2 is killed with SIGKILL (one rank, chosen at
//     random) at random points, and once in the middle of a save; resumed from its last complete checkpoint, its
//     losses, gradient norms and final checkpoint are bitwise those of the run that was never interrupted.
//   - AnAsyncSaveKilledMidwayResumesBitwise: --ckpt-async saves equal the synchronous ones byte for byte; a rank
//     killed while its thread writes one leaves the previous checkpoint, which resumes bitwise.
//   - ACheckpointFromEightRanksResumesOnOtherGrids: saved on data=1,z=2,y=2,x=2, resumed serially and on
//     data=2,z=1,y=1,x=4; each step's loss within 1e-4 relative of the unmoved run's (the tolerance of every
//     grid against serial over 20 steps, test_model_grids.cpp).
//   - HuggingFaceWeightsStartARunOnAnyGrid: --init-from an exported folder equals --init-from the checkpoint, and
//     runs on a grid of 4.
//   - ASignalSavesAndStops: SIGUSR1 to one rank stops the job with status 75 after a checkpoint, which resumes
//     bitwise; a run without --ckpt-dir says once that its weights will not be kept.
//   - ASignalDuringSetUpIsNotLost: SIGTERM before the first step still saves and stops (75) with a --ckpt-dir
//   - ASignalDuringTheClosingSampleEndsItWith75: the last checkpoint saved, a signal mid-sample ends the run at once
//   - SignalsDuringGemmsLeaveTheHeapIntact: a burst of SIGUSR1s while a rank computes still ends in status 75
//     and a checkpoint that resumes bitwise. oneDNN's sgemm kernels run with the stack pointer in the heap, and a
//     handler on their thread wrote its frame there (train/stop_signals.h): without the signal thread this run
//     aborted in malloc most of the time.
// The random kill points come from a seed printed with any failure.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "jobs/job.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_checkpoint_jobs {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::BackgroundJob;
using testing::expect_same_checkpoint_data;
using testing::file_bytes;
using testing::lines_of;
using testing::step_results;

// Which of the ranks' processes is rank 0, from the environment mpirun gave it.
pid_t rank_zero(std::vector<pid_t> const& ranks) {
    for (pid_t pid : ranks) {
        std::string const environment = file_bytes("/proc/" + std::to_string(pid) + "/environ");
        if (environment.find(std::string("OMPI_COMM_WORLD_RANK=0") + '\0') != std::string::npos) return pid;
    }
    ADD_FAILURE() << "no rank 0 among the job's processes";
    return ranks.front();
}

bool has_partial_save(fs::path const& dir) {
    std::error_code error;
    for (auto const& entry : fs::directory_iterator(dir, error)) {
        if (entry.path().extension() == ".partial") return true;
    }
    return false;
}

class CheckpointJobs : public testing::JobTest {
protected:
    static constexpr char const* grid4 = "-np 4 ";
    static std::string mpirun_command(std::string const& contexts, fs::path const& log) {
        return "timeout " + std::to_string(time_limit(120)) + " mpirun --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1 " + contexts + " > " +
               log.string() + ".out 2> " + log.string() + ".err";
    }

    // Trains `options` on `ranks` ranks with a --ckpt-dir, sends `signals` SIGUSR1s (20 µs apart, until the rank is
    // gone) to its last rank once `records` steps are in the metrics, expects status 75, then resumes the run and
    // expects the losses of `calm_metrics`, the same run never signalled.
    static void signalled_run_resumes(std::string const& options, int ranks, std::size_t records, int signals,
                                      fs::path const& calm_metrics) {
        std::string const np = "-np " + std::to_string(ranks) + " ";
        fs::path const ckpt = dir_ / "signalled";
        fs::path const metrics = dir_ / "signalled.jsonl";
        fs::path const trace = dir_ / "signalled_trace.json";
        fs::remove_all(ckpt);
        fs::remove(metrics);
        fs::remove(trace);
        std::string const command =
            train(options + "--ckpt-dir " + ckpt.string() + " --metrics " + metrics.string());
        {
            // The stopped run keeps the trace of its steps too.
            BackgroundJob job(mpirun_command(np + command + " --trace " + trace.string(), ckpt));
            while (lines_of(metrics).size() < records && job.running()) std::this_thread::sleep_for(200us);
            std::vector<pid_t> const pids = BackgroundJob::ranks(ckpt.string());
            ASSERT_EQ(pids.size(), static_cast<std::size_t>(ranks));
            for (int sent = 0; sent < signals && ::kill(pids.back(), SIGUSR1) == 0; ++sent) {
                std::this_thread::sleep_for(20us);
            }
            EXPECT_EQ(job.wait(), 75) << file_bytes(ckpt.string() + ".err");
        }
        ASSERT_FALSE(fs::is_empty(ckpt));
        EXPECT_NE(file_bytes(trace).find("\"traceEvents\""), std::string::npos) << "no trace of the stopped run";
        EXPECT_FALSE(fs::exists(trace.string() + ".partial"));
        testing::JobResult const resumed = mpirun(np + command + " --resume latest");
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        EXPECT_EQ(step_results(metrics), step_results(calm_metrics));
    }
};

// Its jobs are one rank of one thread: ctest runs it beside other tests (tests/CMakeLists.txt, "OneRankJob").
using CheckpointOneRankJob = CheckpointJobs;

TEST_F(CheckpointJobs, KilledRunsResumeBitwise) {
    std::string const options = "--grid data=1,z=2,y=1,x=2 --steps 14 --ckpt-every 2 --eval-every 5 --eval-batches 2 ";
    fs::path const reference = dir_ / "reference";
    testing::JobResult const full =
        mpirun(std::string(grid4) + train(options + "--ckpt-dir " + reference.string() + " --metrics " +
                                          (dir_ / "reference.jsonl").string()));
    ASSERT_EQ(full.exit_status, 0) << full.stderr_text;
    std::map<int, std::string> const expected = step_results(dir_ / "reference.jsonl");
    ASSERT_EQ(expected.size(), 14u);

    unsigned const seed = std::random_device{}();
    SCOPED_TRACE("kill points drawn with seed " + std::to_string(seed));
    std::mt19937 random(seed);
    // Each scenario: kill once the metrics show `after_step` steps done (plus a random few milliseconds), or,
    // with after_step < 0, in the middle of the first save that starts.
    for (int after_step : {static_cast<int>(random() % 6) + 1, -1, static_cast<int>(random() % 6) + 7}) {
        SCOPED_TRACE("kill after step " + std::to_string(after_step));
        fs::path const ckpt = dir_ / ("killed" + std::to_string(after_step + 1));
        fs::path const metrics = ckpt.string() + ".jsonl";
        std::string const command = train(options + "--ckpt-dir " + ckpt.string() + " --metrics " + metrics.string());
        {
            BackgroundJob job(mpirun_command(testing::a_rank_killed + (grid4 + command), ckpt));
            std::vector<pid_t> ranks;
            for (auto start = std::chrono::steady_clock::now(); ranks.size() < 4;) {
                ranks = BackgroundJob::ranks(ckpt.string());
                ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "the ranks did not start";
            }
            pid_t victim = ranks[random() % ranks.size()];
            if (after_step < 0) {
                while (!has_partial_save(ckpt) && job.running()) std::this_thread::sleep_for(100us);
                // Rank 0 creates the folder and completes the save: stopped now, it never completes it.
                victim = rank_zero(ranks);
                ::kill(victim, SIGSTOP);
                EXPECT_TRUE(has_partial_save(ckpt)) << "the kill missed the save";
            } else {
                while (static_cast<int>(lines_of(metrics).size()) < after_step + 1 && job.running()) {
                    std::this_thread::sleep_for(200us);
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(random() % 20));
            }
            ::kill(victim, SIGKILL);
            EXPECT_NE(job.wait(), 0) << "the job survived the kill";
        }
        // Killed before its first checkpoint, the run starts afresh: --resume latest says so and goes on.
        testing::JobResult const resumed = mpirun(grid4 + command + " --resume latest");
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        EXPECT_EQ(step_results(metrics), expected);
        expect_same_checkpoint_data(reference / "step_00000014", ckpt / "step_00000014");
    }
}

// --ckpt-async: the background saves are byte for byte the synchronous ones, and a rank killed while its thread
// writes a save (at the open of its file of step 4) leaves step 2 the newest complete checkpoint, from which
// --resume latest finishes the run bitwise.
TEST_F(CheckpointJobs, AnAsyncSaveKilledMidwayResumesBitwise) {
    std::string const options = "--grid data=1,z=2,y=1,x=2 --steps 8 --ckpt-every 2 --eval-every 100 --eval-batches 1 ";
    fs::path const sync = dir_ / "sync", async = dir_ / "async";
    testing::JobResult const saved_sync = mpirun(
        std::string(grid4) + train(options + "--ckpt-dir " + sync.string() + " --metrics " + sync.string() + ".jsonl"));
    ASSERT_EQ(saved_sync.exit_status, 0) << saved_sync.stderr_text;
    std::string const async_command =
        train(options + "--ckpt-async --ckpt-dir " + async.string() + " --metrics " + async.string() + ".jsonl");
    testing::JobResult const saved_async = mpirun(std::string(grid4) + async_command);
    ASSERT_EQ(saved_async.exit_status, 0) << saved_async.stderr_text;
    EXPECT_EQ(step_results(async.string() + ".jsonl"), step_results(sync.string() + ".jsonl"));
    for (char const* step : {"step_00000002", "step_00000004", "step_00000006", "step_00000008"}) {
        SCOPED_TRACE(step);
        expect_same_checkpoint_data(sync / step, async / step);
        EXPECT_TRUE(fs::exists(async / step / "COMPLETE"));
    }

    fs::remove_all(async);
    fs::remove(async.string() + ".jsonl");
    testing::JobResult const killed = mpirun(
        testing::killed_at_file_operation("open:step_00000004.partial/rank00001-000.safetensors.partial") + grid4 +
        async_command);
    EXPECT_NE(killed.exit_status, 0) << "the kill did not happen";
    EXPECT_TRUE(fs::exists(async / "step_00000002" / "COMPLETE")) << killed.stderr_text;
    EXPECT_FALSE(fs::exists(async / "step_00000004")) << "the killed save was completed";
    testing::JobResult const resumed = mpirun(std::string(grid4) + async_command + " --resume latest");
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("resuming from " + (async / "step_00000002").string()),
              std::string::npos);
    EXPECT_EQ(step_results(async.string() + ".jsonl"), step_results(sync.string() + ".jsonl"));
    expect_same_checkpoint_data(sync / "step_00000008", async / "step_00000008");
}

TEST_F(CheckpointJobs, ACheckpointFromEightRanksResumesOnOtherGrids) {
    std::string const options = "--steps 8 --ckpt-every 4 --eval-every 100 --eval-batches 1 ";
    fs::path const saved = dir_ / "eight";
    testing::JobResult const original = mpirun("-np 8 " + train(options + "--grid data=1,z=2,y=2,x=2 --ckpt-dir " +
                                                                saved.string() + " --metrics " +
                                                                (dir_ / "eight.jsonl").string()));
    ASSERT_EQ(original.exit_status, 0) << original.stderr_text;
    std::map<int, std::string> const unmoved = step_results(dir_ / "eight.jsonl");
    for (std::string const& target : {std::string("-np 1 ") + train(options), "-np 8 " + train(options + "--grid data=2,z=1,y=1,x=4")}) {
        SCOPED_TRACE(target);
        fs::path const moved = dir_ / "moved";
        testing::fresh_ckpt_dir(saved / "step_00000004", moved, dir_ / "moved.jsonl");
        testing::JobResult const resumed = mpirun(target + " --ckpt-dir " + moved.string() + " --resume latest --metrics " +
                                                  (dir_ / "moved.jsonl").string());
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        std::map<int, std::string> const results = step_results(dir_ / "moved.jsonl");
        ASSERT_EQ(results.size(), 4u);
        for (auto const& [step, text] : results) {
            EXPECT_GE(step, 4);
            double const loss = std::stod(text), expected = std::stod(unmoved.at(step));
            EXPECT_LT(std::abs(loss - expected) / expected, 1e-4) << "step " << step;
        }
    }
}

TEST_F(CheckpointJobs, ASignalSavesAndStops) {
    std::string const options = "--grid data=1,z=1,y=2,x=1 --steps 30 --eval-every 100 --eval-batches 1 ";
    testing::JobResult const full = mpirun("-np 2 " + train(options + "--metrics " + (dir_ / "whole.jsonl").string()));
    ASSERT_EQ(full.exit_status, 0) << full.stderr_text;
    std::ifstream out(dir_ / "stdout.txt");
    std::string const printed{std::istreambuf_iterator<char>(out), std::istreambuf_iterator<char>()};
    std::size_t const note = printed.find("no --ckpt-dir: the trained weights will not be kept");
    EXPECT_NE(note, std::string::npos) << printed;
    EXPECT_EQ(printed.find("no --ckpt-dir", note + 1), std::string::npos) << "said more than once: " << printed;
    signalled_run_resumes(options, 2, 4, 1, dir_ / "whole.jsonl");
}

// Whether `signal` is in the mask `field` of process `pid` in /proc ("SigCgt:", caught; "ShdPnd:", sent to the
// process and not yet taken by a thread): bit 14 for signal 15.
bool in_signal_mask(pid_t pid, std::string const& field, int signal) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind(field, 0) == 0) return (std::stoull(line.substr(field.size()), nullptr, 16) >> (signal - 1)) & 1;
    }
    return false;
}

// Whether process `pid` has installed a handler for SIGTERM.
bool catches_sigterm(pid_t pid) { return in_signal_mask(pid, "SigCgt:", SIGTERM); }

// SIGTERM at the first moment the process can catch it (main's first instruction, long before its first step: the
// data, the model and the GEMM rate are still to come). A run with a --ckpt-dir holds it, saves at its first step
// boundary and exits 75, and --resume latest then finishes the run; a run without one ends by the signal.
TEST_F(CheckpointOneRankJob, ASignalDuringSetUpIsNotLost) {
    for (bool const saves : {true, false}) {
        SCOPED_TRACE(saves ? "with --ckpt-dir" : "without --ckpt-dir");
        fs::path const ckpt = dir_ / (saves ? "early" : "early_unsaved");
        fs::path const metrics = ckpt.string() + ".jsonl";
        fs::remove_all(ckpt);
        fs::remove(metrics);
        std::string const command = train("--steps 3 --eval-every 100 --eval-batches 1 --metrics " +
                                          metrics.string() + (saves ? " --ckpt-dir " + ckpt.string() : ""));
        {
            BackgroundJob job(mpirun_command("-np 1 " + command, ckpt));
            std::vector<pid_t> ranks;
            for (auto start = std::chrono::steady_clock::now(); ranks.empty() || !catches_sigterm(ranks[0]);) {
                ranks = BackgroundJob::ranks(metrics.string());
                ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "the rank did not start";
            }
            ASSERT_TRUE(lines_of(metrics).empty()) << "signalled too late: a step is done";
            ::kill(ranks[0], SIGTERM);
            int const status = job.wait();
            if (saves) {
                EXPECT_EQ(status, 75) << file_bytes(ckpt.string() + ".err");
            } else {
                EXPECT_NE(status, 0);
                EXPECT_NE(status, 75) << "a run without a --ckpt-dir has nothing to resume";
            }
        }
        if (saves) {
            ASSERT_TRUE(fs::is_directory(ckpt / "step_00000000")) << "no checkpoint of the first step";
            // An import never replaces a training run's step 0, --overwrite or not (it did, with weights alone:
            // the run could not be resumed).
            fs::path const exported = dir_ / "early_hf";
            fs::remove_all(exported);
            ASSERT_EQ(mpirun("-np 1 " + axonn() + " export " + (ckpt / "step_00000000").string() + " " +
                             exported.string())
                          .exit_status,
                      0);
            testing::JobResult const imported =
                mpirun("-np 1 " + axonn() + " import " + exported.string() + " --out " + ckpt.string() + " --overwrite");
            EXPECT_EQ(imported.exit_status, 1) << imported.stderr_text;
            EXPECT_NE(imported.stderr_text.find("--out " + ckpt.string() + " holds a training run's checkpoint of step "
                                                "0 (" + (ckpt / "step_00000000").string() +
                                                "), which an import never replaces, --overwrite or not"),
                      std::string::npos)
                << imported.stderr_text;
            testing::JobResult const resumed = mpirun("-np 1 " + command + " --resume latest");
            ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
            EXPECT_EQ(step_results(metrics).size(), 3u);
        }
    }
}

// Ctrl-C (SIGINT) or a hang-up (SIGHUP) to a run of one process started without mpirun (which turns Ctrl-C into
// SIGTERM for its ranks) is a stop signal too: the run saves the step it is at and exits 75, and --resume latest
// continues from there. The same signal twice within a second is one request (a terminal's Ctrl-C reaches a
// wrapper and the run, and the wrapper passes it on: the run quit without its checkpoint); a second Ctrl-C a second
// or more after the first quits at once, without saving (130), and says so; the save it cuts short, caught here
// mid-way, is left for the next save to remove. No other case leaves a partial file. (A run of one process lost
// every step to a Ctrl-C before.)
TEST_F(CheckpointOneRankJob, CtrlCOrAHangUpSavesAndStopsAndASecondCtrlCQuitsAtOnce) {
    enum class Sent { once, twice_at_once, again_after_a_second };
    struct Case {
        int signal;
        Sent sent;
        char const* name;
    };
    for (Case const& each : {Case{SIGINT, Sent::once, "ctrl_c"}, Case{SIGHUP, Sent::once, "hang_up"},
                             Case{SIGINT, Sent::twice_at_once, "ctrl_c_twice_at_once"},
                             Case{SIGHUP, Sent::twice_at_once, "hang_up_twice_at_once"},
                             Case{SIGINT, Sent::again_after_a_second, "ctrl_c_again"}}) {
        SCOPED_TRACE(each.name);
        fs::path const ckpt = dir_ / each.name;
        fs::path const metrics = ckpt.string() + ".jsonl";
        // Steps long enough (about 0.1 s) that a second signal sent at once comes within the step the first ends.
        std::string const shape = "--batch 128 --seq 64 --eval-every 100000 --eval-batches 1 --metrics " +
                                  metrics.string() + " --ckpt-dir " + ckpt.string();
        std::string const command = train("--steps 100000 " + shape);
        // For a second signal a second later, the rank stops itself as its save opens its first file
        // (support/kill_at_file_operation.cpp), and the test sends it then.
        bool const again = each.sent == Sent::again_after_a_second;
        std::string const held_at_the_save = std::string("env LD_PRELOAD=") + AXONN_KILL_AT_LIBRARY +
                                             " AXONN_STOP_AT=open:.safetensors.partial ASAN_OPTIONS=" +
                                             testing::asan_options_with_preload() + " ";
        BackgroundJob job((again ? held_at_the_save : std::string()) + "timeout " +
                          std::to_string(time_limit(120)) + " " + command + " > " + ckpt.string() + ".out 2> " +
                          ckpt.string() + ".err");
        for (auto start = std::chrono::steady_clock::now(); lines_of(metrics).size() < 3;) {
            ASSERT_TRUE(job.running()) << file_bytes(ckpt.string() + ".err");
            ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "no step done";
            std::this_thread::sleep_for(1ms);
        }
        std::vector<pid_t> const ranks = BackgroundJob::ranks(metrics.string());
        ASSERT_EQ(ranks.size(), 1u);
        // Each one taken before the next: two sent at once are one pending signal.
        auto const send = [&] {
            while (in_signal_mask(ranks[0], "ShdPnd:", each.signal)) std::this_thread::sleep_for(100us);
            ::kill(ranks[0], each.signal);
        };
        send();
        if (each.sent == Sent::twice_at_once) send();
        if (again) {
            for (auto start = std::chrono::steady_clock::now(); !testing::stopped(ranks[0]);) {
                ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << "the save did not start";
                std::this_thread::sleep_for(1ms);
            }
            std::this_thread::sleep_for(1100ms);
            ::kill(ranks[0], each.signal);
            ::kill(ranks[0], SIGCONT);
        }
        int const status = job.wait();
        std::string const err = file_bytes(ckpt.string() + ".err");
        if (again) {
            EXPECT_EQ(status, 128 + SIGINT) << err;
            EXPECT_EQ(err.find("stopped by"), std::string::npos) << err;
            EXPECT_NE(err.find("axonn: a second Ctrl-C or hang-up: quitting at once, without the checkpoint under "
                               "way (the newest complete one stays; a save cut short leaves its step_N.partial "
                               "folder, which no resume reads and the next save removes)"),
                      std::string::npos)
                << err;
            // The save it cut short stays as step_N.partial, which no reader takes for a checkpoint: the next run
            // starts anew (there is no complete one), and its first save removes it.
            EXPECT_TRUE(complete_checkpoints(ckpt).empty());
            testing::JobResult const next = mpirun("-np 1 " + train("--steps 2 --ckpt-every 1 --batch 128 --seq 64 "
                                                                    "--eval-batches 1 --resume latest --ckpt-dir " +
                                                                    ckpt.string()));
            ASSERT_EQ(next.exit_status, 0) << next.stderr_text;
            for (auto const& entry : fs::directory_iterator(ckpt)) {
                EXPECT_NE(entry.path().extension(), ".partial") << entry.path();
            }
            continue;
        }
        for (auto const& entry : fs::recursive_directory_iterator(dir_)) {
            EXPECT_NE(entry.path().extension(), ".partial") << entry.path();
        }
        EXPECT_EQ(status, 75) << err;
        std::string const said =
            each.signal == SIGINT ? "stopped by SIGINT (Ctrl-C) after " : "stopped by SIGHUP after ";
        std::size_t const at = err.find(said);
        ASSERT_NE(at, std::string::npos) << err;
        int const steps = std::stoi(err.substr(at + said.size()));
        EXPECT_TRUE(fs::is_directory(ckpt / checkpoint_folder_name(steps))) << err;
        EXPECT_EQ(step_results(metrics).size(), static_cast<std::size_t>(steps));
        testing::JobResult const resumed =
            mpirun("-np 1 " + train("--steps " + std::to_string(steps + 2) + " --resume latest " + shape));
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        EXPECT_EQ(step_results(metrics).size(), static_cast<std::size_t>(steps + 2));
    }
}

// After the last checkpoint the closing sample may run for long (here 100,000 tokens): a stop signal then ends
// the run at once with 75, saying that it is saved, instead of being ignored until the sample ends with 0.
TEST_F(CheckpointOneRankJob, ASignalDuringTheClosingSampleEndsItWith75) {
    fs::path const ckpt = dir_ / "sampling";
    fs::remove_all(ckpt);
    std::string const command =
        train("--steps 2 --eval-every 100 --eval-batches 1 --sample-tokens 100000 --ckpt-dir " + ckpt.string());
    BackgroundJob job(mpirun_command("-np 1 " + command, ckpt));
    fs::path const err = ckpt.string() + ".err";
    for (auto start = std::chrono::steady_clock::now(); file_bytes(err).find("sample ") == std::string::npos;) {
        ASSERT_TRUE(job.running()) << file_bytes(err);
        ASSERT_LT(std::chrono::steady_clock::now() - start, 90s) << "the closing sample did not start";
        std::this_thread::sleep_for(20ms);
    }
    std::vector<pid_t> const ranks = BackgroundJob::ranks(ckpt.string());
    ASSERT_EQ(ranks.size(), 1u);
    ::kill(ranks[0], SIGTERM);
    EXPECT_EQ(job.wait(), 75) << file_bytes(err);
    EXPECT_NE(file_bytes(err).find("stopped by a signal during the closing sample; the run is saved in " +
                                   ckpt.string() + " (step 2)"),
              std::string::npos)
        << file_bytes(err);
    EXPECT_TRUE(fs::exists(ckpt / "step_00000002" / "COMPLETE"));
}

TEST_F(CheckpointOneRankJob, SignalsDuringGemmsLeaveTheHeapIntact) {
    std::string const options = "--steps 30 --eval-every 100 --eval-batches 1 ";
    testing::JobResult const full = mpirun("-np 1 " + train(options + "--metrics " + (dir_ / "calm.jsonl").string()));
    ASSERT_EQ(full.exit_status, 0) << full.stderr_text;
    // Until the rank has stopped: it keeps computing for the rest of the step in progress.
    signalled_run_resumes(options, 1, 2, 2000, dir_ / "calm.jsonl");
}

TEST_F(CheckpointJobs, HuggingFaceWeightsStartARunOnAnyGrid) {
    // A trained checkpoint, exported: starting from the export equals starting from the checkpoint, bit for bit
    // (the export drops only the embedding's padding rows, which training keeps zero), and on a grid of 4 each
    // loss is within 1e-4 relative of the serial run's (test_model_grids.cpp's tolerance over 20 steps).
    testing::JobResult const trained = mpirun("-np 1 " + train("--steps 3 --ckpt-dir " + (dir_ / "trained").string()));
    ASSERT_EQ(trained.exit_status, 0) << trained.stderr_text;
    std::string const export_command = axonn() + " export --format hf " + (dir_ / "trained").string() + " " +
                                       (dir_ / "hf").string() + " > /dev/null";
    ASSERT_EQ(std::system(export_command.c_str()), 0);
    std::string const options = "--steps 4 --eval-every 100 --eval-batches 1 --metrics ";
    for (auto const& [source, name] : {std::pair{dir_ / "trained", "from_ckpt"}, std::pair{dir_ / "hf", "from_hf"}}) {
        testing::JobResult const run =
            mpirun("-np 1 " + train(options + (dir_ / name).string() + ".jsonl --init-from " + source.string()));
        ASSERT_EQ(run.exit_status, 0) << run.stderr_text;
    }
    std::map<int, std::string> const serial = step_results(dir_ / "from_hf.jsonl");
    EXPECT_EQ(step_results(dir_ / "from_ckpt.jsonl"), serial);
    testing::JobResult const grid = mpirun("-np 4 " + train(options + (dir_ / "grid.jsonl").string() +
                                                             " --grid data=1,z=1,y=2,x=2 --init-from " +
                                                             (dir_ / "hf").string()));
    ASSERT_EQ(grid.exit_status, 0) << grid.stderr_text;
    std::map<int, std::string> const on_grid = step_results(dir_ / "grid.jsonl");
    ASSERT_EQ(on_grid.size(), serial.size());
    for (auto const& [step, text] : on_grid) {
        double const loss = std::stod(text), expected = std::stod(serial.at(step));
        EXPECT_LT(std::abs(loss - expected) / expected, 1e-4) << "step " << step;
    }
}

}  // namespace test_checkpoint_jobs
}  // namespace axonn
