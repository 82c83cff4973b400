#include "axonn/core/timer.h"

#include <atomic>

namespace axonn {
namespace {

using Clock = std::chrono::steady_clock;

// Read from the progress thread too: an atomic count of the clock's ticks.
std::atomic<Clock::rep> epoch_ticks{Clock::now().time_since_epoch().count()};

}  // namespace

double trace_seconds() {
    Clock::duration const since = Clock::now().time_since_epoch() - Clock::duration(epoch_ticks.load());
    return std::chrono::duration<double>(since).count();
}

void restart_trace_clock() { epoch_ticks = Clock::now().time_since_epoch().count(); }

}  // namespace axonn
