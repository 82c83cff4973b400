#include "axonn/train/stop_signals.h"

#include "axonn/core/file_io.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <cstring>
#include <stdexcept>
#include <string>

namespace axonn {
namespace {

// Written by the handler, read at step boundaries: the only state a signal handler may touch.
std::atomic<int> received_signal{0};
// Whether a received signal is held for the run to act on, or ends the process.
std::atomic<bool> held{false};
// Nonzero: a signal ends the process at once with this status, after exit_message (exit_on_stop_signals).
std::atomic<int> exit_status{0};
char exit_message[1024];
std::size_t exit_message_bytes = 0;

// The closing work's end: write(2) and _exit(2), which a signal handler may call.
void exit_with_message() {
    remove_unfinished_outputs();
    ssize_t const written = ::write(STDERR_FILENO, exit_message, exit_message_bytes);
    static_cast<void>(written);
    ::_exit(exit_status.load());
}

// The signal's default action, now: the handler is reset and the signal raised again, which is delivered (and ends
// the process) as soon as the handler that raised it returns.
void end_by_default_action(int signal) {
    remove_unfinished_outputs();  // no half-written file, or empty output just made, left behind
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
    raise(signal);
}

// While a change of several files must finish or be undone (EndingDeferred), SIGINT and SIGHUP wait for its end.
std::atomic<bool> ending_deferred{false};
std::atomic<int> deferred_signal{0};

// Said on a terminal at the first Ctrl-C of a run that saves on it: what happens, and how to quit at once.
constexpr char ctrl_c_note[] =
    "\naxonn: Ctrl-C: the run saves a checkpoint at the end of this step and stops; Ctrl-C again quits at once, "
    "without saving\n";
// Said when a second SIGINT or SIGHUP ends a run that was saving on the first.
constexpr char quit_note[] =
    "\naxonn: a second Ctrl-C or hang-up: quitting at once, without the checkpoint under way (the newest complete "
    "one stays; a save cut short leaves its step_N.partial folder, which no resume reads and the next save "
    "removes)\n";

// When the run took its stop signal (CLOCK_MONOTONIC, ns; clock_gettime may be called in a handler). A SIGINT or
// SIGHUP within repeat_window of it is the same request delivered twice, not a second Ctrl-C: a terminal's Ctrl-C
// reaches every process of its group, so a wrapper that passes it on (`timeout`, mpirun's SIGTERM) delivers it
// again within milliseconds, and the run quit without its checkpoint.
std::atomic<std::int64_t> stop_taken_at{0};
constexpr std::int64_t repeat_window_ns = 1'000'000'000;

std::int64_t monotonic_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

void write_note(char const* note, std::size_t bytes) {
    ssize_t const written = ::write(STDERR_FILENO, note, bytes);
    static_cast<void>(written);
}

// SIGINT (Ctrl-C) and SIGHUP (a closed terminal) end any command, after removing its partial files; except the
// first in a run that saves on a stop signal (held), which is one.
extern "C" void end_now(int signal) {
    int none = 0;
    bool const saving = held.load() && exit_status.load() == 0;
    if (saving && received_signal.compare_exchange_strong(none, signal)) {
        stop_taken_at.store(monotonic_ns());
        if (signal == SIGINT && ::isatty(STDERR_FILENO) == 1) write_note(ctrl_c_note, sizeof ctrl_c_note - 1);
        return;
    }
    if (saving) {
        if (monotonic_ns() - stop_taken_at.load() < repeat_window_ns) return;
        write_note(quit_note, sizeof quit_note - 1);
    }
    if (exit_status.load() != 0) exit_with_message();  // the closing sample of a saved run: it says so
    if (ending_deferred.load()) {
        deferred_signal.store(signal);
        return;
    }
    end_by_default_action(signal);
}

extern "C" void record_signal(int signal) {
    int none = 0;
    if (received_signal.compare_exchange_strong(none, signal)) stop_taken_at.store(monotonic_ns());
    if (exit_status.load() != 0) exit_with_message();
    if (!held.load()) end_by_default_action(signal);
}

void install_handler(int signal, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // system calls in flight (a write, a collective's poll) go on
    sigaction(signal, &action, nullptr);
}

// The signals the receiving thread takes: the stop signals, and those that end any command.
sigset_t received_signal_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return set;
}

// The receiving thread: the stop signals unblocked, asleep until the process ends. pause() returns after each
// handler; the handler has recorded the signal, and the training loop reads it.
extern "C" void* receive_signals(void*) {
    sigset_t const set = received_signal_set();
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    for (;;) pause();
}

void require_zero(int status, char const* what) {
    if (status != 0) throw std::runtime_error(std::string("cannot ") + what + ": " + std::strerror(status));
}

}  // namespace

void receive_stop_signals_on_own_thread(bool hold) {
    held.store(hold);
    install_handler(SIGTERM, record_signal);
    install_handler(SIGUSR1, record_signal);
    for (int const signal : {SIGINT, SIGHUP}) {
        struct sigaction inherited {};
        // One that the launcher ignores stays ignored: `nohup`, or a shell's background job.
        if (sigaction(signal, nullptr, &inherited) == 0 && inherited.sa_handler != SIG_IGN) {
            install_handler(signal, end_now);
        }
    }
    sigset_t const set = received_signal_set();
    require_zero(pthread_sigmask(SIG_BLOCK, &set, nullptr), "block the stop signals");
    pthread_t receiver;
    require_zero(pthread_create(&receiver, nullptr, receive_signals, nullptr), "start the signal thread");
    require_zero(pthread_detach(receiver), "detach the signal thread");
}

void end_process_on_stop_signals() {
    held.store(false);
    if (int const signal = received_signal.load(); signal != 0) {
        // Raised on this thread, where the stop signals are blocked: sent to the receiving thread instead.
        kill(getpid(), signal);
        for (;;) pause();
    }
}

void exit_on_stop_signals(int status, std::string const& message) {
    exit_message_bytes = std::min(message.size(), sizeof(exit_message));
    std::memcpy(exit_message, message.data(), exit_message_bytes);
    exit_status.store(status);  // after the message: the handler reads it once it sees the status
    if (received_signal.load() != 0) exit_with_message();
}

EndingDeferred::EndingDeferred() { ending_deferred.store(true); }

EndingDeferred::~EndingDeferred() {
    ending_deferred.store(false);
    if (int const signal = deferred_signal.exchange(0); signal != 0) {
        // Raised on this thread, where the signals are blocked: sent to the receiving thread, which ends the process.
        kill(getpid(), signal);
        for (;;) pause();
    }
}

StopSignals::StopSignals() { held.store(true); }

StopSignals::~StopSignals() {
    // A run that is stopping keeps recording: another signal before its exit (a scheduler that repeats itself)
    // must not turn status 75, after a saved checkpoint, into death by that signal.
    if (received_signal.load(std::memory_order_relaxed) != 0) return;
    held.store(false);
}

std::string_view stop_signal_name(int signal) {
    switch (signal) {
        case SIGTERM: return "SIGTERM";
        case SIGUSR1: return "SIGUSR1";
        case SIGINT: return "SIGINT (Ctrl-C)";
        case SIGHUP: return "SIGHUP";
        default: return "a signal";
    }
}

int StopSignals::received_here() const { return received_signal.load(std::memory_order_relaxed); }

}  // namespace axonn
