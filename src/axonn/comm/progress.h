// Progress for non-blocking collectives. OpenMPI 4.1 advances a non-blocking collective only while some thread
// is inside an MPI call; a rank busy in a GEMM would otherwise find, at its wait, most of the collective still
// to do. A helper thread therefore owns every pending request: it tests them all every 100 µs until each
// completes, and sleeps while none is pending. Measured against MPI_Test polls between kernels (bench/
// progress_strategies.cpp, docs/PERFORMANCE.md): the thread hides the whole collective even behind one long
// kernel, and costs nothing measurable once the request is done. A thread that waits drives the progress itself
// in MPI_Waitall, holding the engine's mutex so that the helper sleeps meanwhile, rather than sleeping until the
// helper's next poll (that added a poll interval and two thread wake-ups to every blocking gather and scatter).
// The helper runs only where each rank of the node has a CPU of its own: where ranks outnumber CPUs (tests, a
// laptop) there is no idle CPU for it, and its polls only took turns from the ranks being waited for (8 ranks on
// 2 CPUs, the mpi suite's generation tests: 46.2 s with it, 21.7 s without; docs/PERFORMANCE.md). It needs
// MPI_THREAD_MULTIPLE; where MPI does not provide it, collectives progress only in waits as well.
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
    // Without `helper_thread` (or without MPI_THREAD_MULTIPLE), collectives progress only in waits.
    explicit ProgressEngine(bool helper_thread);
    ~ProgressEngine();
    ProgressEngine(ProgressEngine const&) = delete;
    ProgressEngine& operator=(ProgressEngine const&) = delete;

    // Takes the requests of one collective until they all complete.
    std::shared_ptr<InFlight> track(std::vector<MPI_Request> requests);
    // Blocks until the request completes.
    void wait(InFlight& in_flight);
    bool threaded() const { return threaded_; }  // whether a helper thread progresses the requests
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
