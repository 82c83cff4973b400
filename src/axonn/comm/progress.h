// Progress for non-blocking collectives. OpenMPI 4.1 advances a non-blocking collective only while some thread
// is inside an MPI call; a rank busy in a GEMM would otherwise find, at its wait, most of the collective still
// to do. A helper thread therefore owns every pending request: it tests them all every 100 µs until each
// completes, and sleeps while none is pending. Measured against MPI_Test polls between kernels (bench/
// progress_strategies.cpp, docs/PERFORMANCE.md): the thread hides the whole collective even behind one long
// kernel, and costs nothing measurable once the request is done. A thread that waits drives the progress itself
// (it tests, yields its core, tests again, as MPI_Wait does), rather than sleeping until the helper's next poll:
// that sleep added up to a poll interval and two thread wake-ups to every blocking gather and scatter (8 ranks
// oversubscribed on 2 cores, the mpi suite's generation and step-option tests: 78.9 s, 53.6 s with the waits
// polling; docs/PERFORMANCE.md). It needs
// MPI_THREAD_MULTIPLE; where MPI does not provide it, wait() falls back to MPI_Wait and collectives progress only
// there.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace axonn {

// A request handed to the engine, and when it completed (trace clock).
struct InFlight {
    std::vector<MPI_Request> requests;  // one, or one per piece of a collective split at MPI's int count
    bool complete = false;    // guarded by the engine's mutex
    double completed_s = 0;   // set with `complete`
};

class ProgressEngine {
public:
    ProgressEngine();
    ~ProgressEngine();
    ProgressEngine(ProgressEngine const&) = delete;
    ProgressEngine& operator=(ProgressEngine const&) = delete;

    // Takes the requests of one collective until they all complete.
    std::shared_ptr<InFlight> track(std::vector<MPI_Request> requests);
    // Blocks until the request completes.
    void wait(InFlight& in_flight);
    // Waits at most `seconds`; whether it completed. A request left incomplete is no longer tested.
    bool wait_for(std::shared_ptr<InFlight> const& in_flight, double seconds);

private:
    void run();
    void test_pending();  // with the mutex held

    bool threaded_;
    std::mutex mutex_;
    std::condition_variable work_;
    std::condition_variable completed_;
    std::vector<std::shared_ptr<InFlight>> pending_;
    bool stop_ = false;
    std::thread thread_;  // started with the first request
};

}  // namespace axonn
