#include "axonn/train/stop_signals.h"

#include <atomic>

namespace axonn {
namespace {

// Written by the handler, read at step boundaries: the only state a signal handler may touch.
std::atomic<int> received_signal{0};

extern "C" void record_signal(int signal) { received_signal.store(signal, std::memory_order_relaxed); }

}  // namespace

StopSignals::StopSignals() {
    received_signal.store(0);
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // system calls in flight (a write, a collective's poll) go on
    sigaction(SIGTERM, &action, &previous_term_);
    sigaction(SIGUSR1, &action, &previous_usr1_);
}

StopSignals::~StopSignals() {
    sigaction(SIGTERM, &previous_term_, nullptr);
    sigaction(SIGUSR1, &previous_usr1_, nullptr);
}

int StopSignals::received(Communicator& world) const {
    double signal = received_signal.load(std::memory_order_relaxed);
    world.all_reduce_max(&signal, 1);
    return static_cast<int>(signal);
}

}  // namespace axonn
