// Fault injection for the job tests, loaded into a job's ranks with LD_PRELOAD: with AXONN_KILL_AT="OP:SUFFIX" a
// process kills itself (SIGKILL: no handler, no clean-up) right after the first file operation OP whose path ends
// with SUFFIX has been done. OP is "rename" (the new path), "remove" (remove(), unlink(), unlinkat() and rmdir())
// or "open" (open() and open64(): a checkpoint's file opened to be read or written). So a test can stop a save
// between renaming its folder into place and marking it complete, or a pruning after its first removal: windows
// of microseconds that a timed kill would almost never hit. With AXONN_STOP_AT="OP:SUFFIX" instead, the process
// stops itself (SIGSTOP) there, once, so that a test can signal it at that moment and then let it go on (SIGCONT).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

// The real function `name` of the C library, behind this one.
template <typename Function>
Function real(char const* name) {
    return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

// Whether `op` on `path` is the operation that `variable` names ("OP:SUFFIX").
bool named_by(char const* variable, std::string_view op, char const* path) {
    char const* spec = std::getenv(variable);
    if (spec == nullptr || path == nullptr) return false;
    std::string_view const named(spec);
    std::size_t const colon = named.find(':');
    if (colon == std::string_view::npos || named.substr(0, colon) != op) return false;
    return std::string_view(path).ends_with(named.substr(colon + 1));
}

void fault_if_named(std::string_view op, char const* path) {
    if (named_by("AXONN_KILL_AT", op, path)) ::kill(::getpid(), SIGKILL);
    static bool stopped = false;
    if (!stopped && named_by("AXONN_STOP_AT", op, path)) {
        stopped = true;
        ::kill(::getpid(), SIGSTOP);
    }
}

// open() and open64() (one function on 64-bit Linux; a caller compiled with _FILE_OFFSET_BITS=64 calls open64):
// the real `name`, with the mode that only a file being created has.
int open_then_fault(char const* name, char const* path, int flags, va_list arguments) {
    mode_t const mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? va_arg(arguments, mode_t) : 0;
    int const result = real<int (*)(char const*, int, ...)>(name)(path, flags, mode);
    fault_if_named("open", path);
    return result;
}

}  // namespace

extern "C" {

int rename(char const* from, char const* to) {
    int const result = real<int (*)(char const*, char const*)>("rename")(from, to);
    fault_if_named("rename", to);
    return result;
}

int remove(char const* path) {
    int const result = real<int (*)(char const*)>("remove")(path);
    fault_if_named("remove", path);
    return result;
}

int unlink(char const* path) {
    int const result = real<int (*)(char const*)>("unlink")(path);
    fault_if_named("remove", path);
    return result;
}

int unlinkat(int folder, char const* path, int flags) {
    int const result = real<int (*)(int, char const*, int)>("unlinkat")(folder, path, flags);
    fault_if_named("remove", path);
    return result;
}

int open(char const* path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    int const result = open_then_fault("open", path, flags, arguments);
    va_end(arguments);
    return result;
}

int open64(char const* path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    int const result = open_then_fault("open64", path, flags, arguments);
    va_end(arguments);
    return result;
}

int rmdir(char const* path) {
    int const result = real<int (*)(char const*)>("rmdir")(path);
    fault_if_named("remove", path);
    return result;
}

}  // extern "C"
