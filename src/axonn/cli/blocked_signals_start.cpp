// The `axonn` command as launchers start it: a small static program that blocks the stop signals (SIGTERM,
// SIGUSR1, SIGINT and SIGHUP) and becomes the real program, axonn-main (beside it), by exec. The signal mask
// survives exec, and a signal that arrives while blocked waits, pending, until axonn-main's signal thread takes it
// (train/stop_signals.h). Without this, a scheduler's signal in the first milliseconds of a task, while the dynamic
// loader maps MPI, oneDNN and the rest before main can install a handler, ended the task by the signal's default
// action (status 138 or 143, not 75), and a requeueing job script stopped there; a hang-up or a Ctrl-C then ended
// it with 129 or 130 and no checkpoint. A static program has no loader to wait for: the window left is the few
// microseconds before its main.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace {

// The path of axonn-main: the folder of this program's own file (not of argv[0], which a launcher may have found
// on the PATH or named freely).
bool main_program_path(char (&path)[PATH_MAX]) {
    ssize_t const length = ::readlink("/proc/self/exe", path, PATH_MAX - 1);
    if (length <= 0) return false;
    path[length] = '\0';
    char* slash = std::strrchr(path, '/');
    char const name[] = "axonn-main";
    if (slash == nullptr || (slash - path) + sizeof name + 1 > PATH_MAX) return false;
    std::memcpy(slash + 1, name, sizeof name);
    return true;
}

}  // namespace

int main(int, char** argv) {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGUSR1);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
    char path[PATH_MAX];
    if (!main_program_path(path)) {
        std::fprintf(stderr, "axonn: error: cannot find this program's own file (/proc/self/exe): mount /proc\n");
        return 1;
    }
    ::execv(path, argv);
    std::fprintf(stderr,
                 "axonn: error: cannot start %s: %s (the axonn command and axonn-main belong in one folder: "
                 "build or install them again)\n",
                 path, std::strerror(errno));
    return 1;
}
