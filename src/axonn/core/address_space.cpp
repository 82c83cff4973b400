#include "axonn/core/address_space.h"

#include "axonn/core/error.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>

namespace axonn {
namespace {

constexpr std::size_t mebibyte = std::size_t{1} << 20;

// The soft limit on the address space, in bytes; none where it is unlimited (or cannot be read).
std::optional<std::size_t> address_space_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
    return static_cast<std::size_t>(limit.rlim_cur);
}

// The bytes the process has mapped now (VmSize: /proc/self/statm's first field, in pages); 0 where unreadable.
std::size_t mapped_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    statm >> pages;
    return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

void require_enough_address_space() {
    std::optional<std::size_t> const limit = address_space_limit();
    if (!limit || *limit >= least_address_space) return;
    fail("this process may map at most {} MiB (ulimit -v {}), less than the {} MiB a command needs to start (MPI, "
         "its threads and the GEMM library): raise the limit (ulimit -v {})",
         *limit / mebibyte, *limit / 1024, least_address_space / mebibyte, 4 * least_address_space / 1024);
}

std::optional<std::string> address_space_shortfall(std::size_t more) {
    std::optional<std::size_t> const limit = address_space_limit();
    if (!limit) return std::nullopt;
    std::size_t const mapped = mapped_bytes() + more;
    if (mapped + address_space_headroom <= *limit) return std::nullopt;
    return fmt::format("ulimit -v {} leaves {} MiB of address space beyond the {} MiB the process would map, less "
                       "than the {} MiB the GEMM library's own buffers need: raise the limit, or choose a smaller "
                       "model, batch or sequence, or more ranks",
                       *limit / 1024, *limit > mapped ? (*limit - mapped) / mebibyte : 0, mapped / mebibyte,
                       address_space_headroom / mebibyte);
}

}  // namespace axonn
