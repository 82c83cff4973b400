// Fault injection for the job tests, loaded into a job's ranks with LD_PRELOAD: with AXONN_KILL_AT="OP:SUFFIX" a
// process kills itself (SIGKILL: no handler, no clean-up) right after the first file operation OP whose path ends
// with SUFFIX has been done. OP is "rename" (the new path) or "remove" (remove(), unlink(), unlinkat() and rmdir()).
// So a test can stop a save between renaming its folder into place and marking it complete, or a pruning after
// its first removal: windows of microseconds that a timed kill would almost never hit.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

// The real function `name` of the C library, behind this one.
template <typename Function>
Function real(char const* name) {
    return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

// Kills the process if `op` on `path` is the operation AXONN_KILL_AT names.
void kill_if_named(std::string_view op, char const* path) {
    char const* spec = std::getenv("AXONN_KILL_AT");
    if (spec == nullptr || path == nullptr) return;
    std::string_view const named(spec);
    std::size_t const colon = named.find(':');
    if (colon == std::string_view::npos || named.substr(0, colon) != op) return;
    if (std::string_view(path).ends_with(named.substr(colon + 1))) ::kill(::getpid(), SIGKILL);
}

}  // namespace

extern "C" {

int rename(char const* from, char const* to) {
    int const result = real<int (*)(char const*, char const*)>("rename")(from, to);
    kill_if_named("rename", to);
    return result;
}

int remove(char const* path) {
    int const result = real<int (*)(char const*)>("remove")(path);
    kill_if_named("remove", path);
    return result;
}

int unlink(char const* path) {
    int const result = real<int (*)(char const*)>("unlink")(path);
    kill_if_named("remove", path);
    return result;
}

int unlinkat(int folder, char const* path, int flags) {
    int const result = real<int (*)(int, char const*, int)>("unlinkat")(folder, path, flags);
    kill_if_named("remove", path);
    return result;
}

int rmdir(char const* path) {
    int const result = real<int (*)(char const*)>("rmdir")(path);
    kill_if_named("remove", path);
    return result;
}

}  // extern "C"
