// Wall-clock timing for progress lines, metrics, benchmarks and traces.
#pragma once

#include <chrono>

namespace axonn {

class Stopwatch {
public:
    Stopwatch() : start_(Clock::now()) {}
    void restart() { start_ = Clock::now(); }
    double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

private:
    using Clock = std::chrono::steady_clock;
    Clock::time_point start_;
};

// Seconds on the process's trace clock: since its epoch, which restart_trace_clock() sets (the trainer does,
// right after a barrier, so that every rank's timeline starts together). Traces and the per-call records of the
// communication layer use it.
double trace_seconds();
void restart_trace_clock();

}  // namespace axonn
