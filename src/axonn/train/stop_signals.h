// Stopping cleanly when a cluster's scheduler asks: Slurm sends SIGTERM before a time limit or a preemption
// (or the signal `sbatch --signal=USR1@120` names, that many seconds before), and `mpirun` forwards SIGTERM and
// SIGUSR1 to every rank. A run with a --ckpt-dir catches both, finishes the step in progress, saves a checkpoint
// and exits with status 75 ("try again": resume with --resume latest).
//
// The signal may reach one rank only, or the ranks at different moments; the ranks agree at every step boundary
// with one tiny all-reduce, so that all of them save the same step.
//
// A handler must never run on a thread that computes: oneDNN's JIT sgemm kernels (2.6, Debian's; fixed upstream in
// 3.11, oneDNN issue 4845) point the stack pointer into a heap workspace while they run, so the kernel's signal
// frame lands in the heap and corrupts it (a later malloc aborts). The process therefore receives these signals on
// a thread of their own: receive_stop_signals_on_own_thread() blocks them in the calling thread, which every thread
// started later inherits (MPI's, OpenMP's), and starts one thread that leaves them unblocked and does nothing else.
//
// SIGINT (Ctrl-C) and SIGHUP (a closed terminal), unless the launcher ignores them, end any command at once, as
// their default action would, but on that same thread and after removing the partial files of the outputs being
// written (core/file_io.h, AtomicFile) and the outputs just made that are still empty (ProvisionalOutputs: a new
// metrics file, a new checkpoint folder holding only its lock), so that an interrupted command leaves nothing
// half-written or empty behind. The exception is a run that saves on a stop signal: the first of them is one (on
// a terminal, Ctrl-C says so), as under mpirun, which turns Ctrl-C into SIGTERM for its ranks; a run of one
// process started without mpirun lost every step since its last checkpoint to a Ctrl-C. The next ends it at once.
//
// The handler is installed there too, first thing in main, so that a signal in the first seconds of a run (while
// it reads its data and checkpoint and measures the GEMM rate) is not lost: a command that will act on it (`train`
// with a --ckpt-dir) holds it until its first step boundary; any other ends as the signal's default action would.
#pragma once

#include "axonn/comm/communicator.h"

#include <csignal>
#include <stdexcept>
#include <string>
#include <string_view>

namespace axonn {

// Exit status of a run stopped by a signal after its checkpoint was saved.
inline constexpr int stopped_exit_status = 75;

// "SIGTERM", "SIGUSR1", "SIGINT (Ctrl-C)" or "SIGHUP": the stop signal a run's end names.
std::string_view stop_signal_name(int signal);

// Thrown on every rank once the checkpoint of a stopped run is saved; main ends the program with
// stopped_exit_status.
class StoppedBySignal : public std::runtime_error {
public:
    explicit StoppedBySignal(std::string const& message) : std::runtime_error(message) {}
};

// Blocks SIGTERM, SIGUSR1, SIGINT and SIGHUP in the calling thread, starts the one thread that receives them, and
// installs their handlers. `hold`: a stop signal is recorded for the run to act on (until
// end_process_on_stop_signals); otherwise it ends the process as its default action would. Call it first thing in
// main, before any other thread exists.
void receive_stop_signals_on_own_thread(bool hold);

// From now on a stop signal ends the process as its default action would; one already received ends it now. For a
// command that turns out not to save on a signal (`train` without a --ckpt-dir).
void end_process_on_stop_signals();

// From now on a stop signal ends the process at once: `message` on stderr, then exit `status` (a signal received
// before, and not yet acted on, ends it now). For the closing work of a run whose last checkpoint is saved (the
// closing sample, which may outlast a scheduler's grace period): there is nothing left to save.
void exit_on_stop_signals(int status, std::string const& message);

// While alive, SIGINT and SIGHUP wait instead of ending the process at once; afterwards one received meanwhile ends
// it. For a change of several files that must finish or be undone whole (a rollback's setting aside): ended midway,
// it left some checkpoints set aside and others not, or a copy cut short. (SIGTERM and SIGUSR1 a run holds anyway.)
class EndingDeferred {
public:
    EndingDeferred();
    ~EndingDeferred();
    EndingDeferred(EndingDeferred const&) = delete;
    EndingDeferred& operator=(EndingDeferred const&) = delete;
};

// While alive, SIGTERM and SIGUSR1 are recorded instead of ending the process (also one received before, while
// held since main); afterwards, unless one was received, they end it again.
class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(StopSignals const&) = delete;
    StopSignals& operator=(StopSignals const&) = delete;

    // The signal this rank has received so far (0: none); the caller agrees over the ranks.
    int received_here() const;

};

}  // namespace axonn
