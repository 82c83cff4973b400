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
#pragma once

#include "axonn/comm/communicator.h"

#include <csignal>
#include <stdexcept>
#include <string>

namespace axonn {

// Exit status of a run stopped by a signal after its checkpoint was saved.
inline constexpr int stopped_exit_status = 75;

// Thrown on every rank once the checkpoint of a stopped run is saved; main ends the program with
// stopped_exit_status.
class StoppedBySignal : public std::runtime_error {
public:
    explicit StoppedBySignal(std::string const& message) : std::runtime_error(message) {}
};

// Blocks SIGTERM and SIGUSR1 in the calling thread and starts the one thread that receives them, where their
// handler (StopSignals') runs, or their default action ends the process as before. Call it first thing in main,
// before any other thread exists.
void receive_stop_signals_on_own_thread();

// While alive, SIGTERM and SIGUSR1 are recorded instead of ending the process.
class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(StopSignals const&) = delete;
    StopSignals& operator=(StopSignals const&) = delete;

    // The signal that any rank of `world` has received so far (0: none). Collective over `world`.
    int received(Communicator& world) const;

private:
    struct sigaction previous_term_ {};
    struct sigaction previous_usr1_ {};
};

}  // namespace axonn
