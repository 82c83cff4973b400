#include "axonn/comm/progress.h"

#include "axonn/core/timer.h"

#include <algorithm>
#include <chrono>

namespace axonn {
namespace {

constexpr auto progress_poll_interval = std::chrono::microseconds(100);

bool mpi_is_multithreaded() {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided == MPI_THREAD_MULTIPLE;
}

}  // namespace

ProgressEngine::ProgressEngine(bool helper_thread) : threaded_(helper_thread && mpi_is_multithreaded()) {}

ProgressEngine::~ProgressEngine() {
    {
        std::lock_guard const lock(mutex_);
        stop_ = true;
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::shared_ptr<InFlight> ProgressEngine::track(std::vector<MPI_Request> requests) {
    auto in_flight = std::make_shared<InFlight>();
    in_flight->requests = std::move(requests);
    if (!threaded_) return in_flight;
    {
        std::lock_guard const lock(mutex_);
        pending_.push_back(in_flight);
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    work_.notify_one();
    return in_flight;
}

void ProgressEngine::wait(InFlight& in_flight) {
    // A helper waits for the mutex meanwhile: one thread drives MPI's progress, and the helper's polls do not take
    // the waiting rank's core from the ranks it waits for. (Without a helper, nothing is pending and no one waits.)
    std::lock_guard const lock(mutex_);
    if (in_flight.complete) return;
    MPI_Waitall(static_cast<int>(in_flight.requests.size()), in_flight.requests.data(), MPI_STATUSES_IGNORE);
    in_flight.complete = true;
    in_flight.completed_s = trace_seconds();
    std::erase_if(pending_, [&](auto const& pending) { return pending.get() == &in_flight; });
    completed_.notify_all();
}

bool ProgressEngine::wait_for(std::shared_ptr<InFlight> const& in_flight, double seconds) {
    auto const limit = std::chrono::duration<double>(seconds);
    if (!threaded_) {
        Stopwatch watch;
        for (int done = 0; !done; std::this_thread::sleep_for(progress_poll_interval)) {
            MPI_Testall(static_cast<int>(in_flight->requests.size()), in_flight->requests.data(), &done,
                        MPI_STATUSES_IGNORE);
            if (!done && watch.seconds() > seconds) return false;
        }
        return true;
    }
    std::unique_lock lock(mutex_);
    if (completed_.wait_for(lock, limit, [&] { return in_flight->complete; })) return true;
    std::erase(pending_, in_flight);
    return false;
}

void ProgressEngine::test_pending() {
    bool any = false;
    for (auto& in_flight : pending_) {
        int done = 0;
        MPI_Testall(static_cast<int>(in_flight->requests.size()), in_flight->requests.data(), &done,
                    MPI_STATUSES_IGNORE);
        if (!done) continue;
        in_flight->complete = true;
        in_flight->completed_s = trace_seconds();
        any = true;
    }
    if (!any) return;
    std::erase_if(pending_, [](auto const& in_flight) { return in_flight->complete; });
    completed_.notify_all();
}

void ProgressEngine::run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        if (pending_.empty()) {
            work_.wait(lock, [&] { return stop_ || !pending_.empty(); });
            continue;
        }
        test_pending();
        lock.unlock();
        std::this_thread::sleep_for(progress_poll_interval);
        lock.lock();
    }
}

}  // namespace axonn
