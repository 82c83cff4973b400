// Signals that end a command: SIGINT (Ctrl-C), SIGHUP, and SIGTERM where the command does not save on it, end the
// process as their default action would, but first remove the partial files of the outputs being written and the
// outputs just made that are still empty, so that an interrupted command leaves nothing half-written or empty
// behind. A signal the launcher ignores (`nohup`)
// stays ignored.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/core/file_io.h"
#include "axonn/train/stop_signals.h"
#include "support/files.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The exit status of a child process that starts as `main` does (the signals of `ignored` ignored by its launcher)
// and runs `work`; -1 where the child could not be started, 3 where its work failed.
template <typename Work>
int status_of_child(Work work, int ignored = 0) {
    pid_t const child = ::fork();
    if (child == 0) {
        // As started from an interactive shell (a test runner may ignore SIGINT for its children).
        std::signal(SIGINT, SIG_DFL);
        std::signal(SIGHUP, SIG_DFL);
        if (ignored != 0) std::signal(ignored, SIG_IGN);
        try {
            receive_stop_signals_on_own_thread(false);
            work();
            ::_exit(0);
        } catch (...) {
            ::_exit(3);
        }
    }
    int status = 0;
    if (child < 0 || ::waitpid(child, &status, 0) != child) return -1;
    return status;
}

// Sends `signal` to this process, which the signal thread takes, and gives it time to end the process (an ignored
// signal leaves it to go on).
void signal_self(int signal) {
    ::kill(::getpid(), signal);
    ::sleep(2);
}

// A child that writes `path` half and receives `signal`.
int status_of_child_interrupted_while_writing(fs::path const& path, int signal, int ignored = 0) {
    return status_of_child(
        [&] {
            AtomicFile file(path, "test file");
            file.write("half of it");
            signal_self(signal);
        },
        ignored);
}

TEST(StopSignals, AnInterruptedCommandLeavesNoPartialFile) {
    TempDir dir;
    for (int const signal : {SIGINT, SIGHUP, SIGTERM}) {
        fs::path const path = dir / ("out_" + std::to_string(signal) + ".txt");
        int const status = status_of_child_interrupted_while_writing(path, signal);
        ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << signal << ": exit status " << status;
        EXPECT_EQ(WTERMSIG(status), signal);
        EXPECT_FALSE(fs::exists(path.string() + ".partial")) << "signal " << signal;
        EXPECT_FALSE(fs::exists(path));
    }
}

// A run's outputs as it makes them before its first step: a new checkpoint folder (two new levels) holding its lock,
// a new metrics file, and an existing empty file it continues (not its own to remove). Interrupted there, it leaves
// none of what it made; interrupted once something is written, it leaves that.
int status_of_run_interrupted_after_making_outputs(fs::path const& dir, bool written) {
    return status_of_child([&] {
        CheckpointDirLock const lock(dir / "runs" / "ckpt");
        ExclusiveOutputFile metrics(dir / "logs" / "metrics.jsonl", "metrics file", ExistingOutput::append);
        ExclusiveOutputFile continued(dir / "continued.jsonl", "metrics file", ExistingOutput::append);
        ExclusiveOutputFile linked(dir / "linked.jsonl", "metrics file", ExistingOutput::append);
        if (written) {
            metrics.write("{\"step\": 1}\n");
            testing::write_file(dir / "runs" / "ckpt" / "saved.txt", "a save");
        }
        signal_self(SIGINT);
    });
}

TEST(StopSignals, AnInterruptedRunLeavesNoEmptyOutputItMade) {
    TempDir dir;
    testing::write_file(dir / "continued.jsonl", "");
    fs::create_symlink("linked_target.jsonl", dir / "linked.jsonl");  // a link to nothing: its target is made
    int const status = status_of_run_interrupted_after_making_outputs(dir.path(), false);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_FALSE(fs::exists(dir / "runs")) << "the checkpoint folder's levels stay";
    EXPECT_FALSE(fs::exists(dir / "logs")) << "the metrics file or its folder stays";
    EXPECT_TRUE(fs::exists(dir / "continued.jsonl")) << "a file the run did not make was removed";
    EXPECT_FALSE(fs::exists(dir / "linked_target.jsonl")) << "the target a link named stays, empty";
    EXPECT_TRUE(fs::is_symlink(dir / "linked.jsonl")) << "the user's link was removed";

    TempDir written;
    testing::write_file(written / "continued.jsonl", "");
    fs::create_symlink("linked_target.jsonl", written / "linked.jsonl");
    ASSERT_TRUE(WIFSIGNALED(status_of_run_interrupted_after_making_outputs(written.path(), true)));
    EXPECT_EQ(testing::file_bytes(written / "logs" / "metrics.jsonl"), "{\"step\": 1}\n");
    EXPECT_EQ(testing::file_bytes(written / "runs" / "ckpt" / "saved.txt"), "a save");
    EXPECT_TRUE(fs::exists(written / "continued.jsonl"));
}

// Ctrl-C during a change that must finish whole (a rollback's renames and copies) waits for its end, then ends the
// command: a rollback ended midway left some checkpoints set aside and others not.
TEST(StopSignals, CtrlCDuringAChangeThatMustFinishWholeWaitsForItsEnd) {
    TempDir dir;
    int const status = status_of_child([&] {
        {
            EndingDeferred const whole;
            ::kill(::getpid(), SIGINT);
            ::sleep(1);  // the signal thread has taken it by now
            testing::write_file(dir / "finished.txt", "the change went on");
        }
        ::sleep(2);
        testing::write_file(dir / "after.txt", "the command went on after the change");
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_TRUE(fs::exists(dir / "finished.txt"));
    EXPECT_FALSE(fs::exists(dir / "after.txt"));
}

TEST(StopSignals, ASignalTheLauncherIgnoresStaysIgnored) {
    TempDir dir;
    int const status = status_of_child_interrupted_while_writing(dir / "nohup.txt", SIGHUP, SIGHUP);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace axonn
