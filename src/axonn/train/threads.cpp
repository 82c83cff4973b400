#include "axonn/train/threads.h"

#include "axonn/core/error.h"

#include <fmt/format.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace axonn {

void use_threads(int threads) {
    int const cpus = cpu_count();
    if (threads < 1 || threads > cpus) {
        throw UsageError(fmt::format("--threads {} is outside 1..{}: this machine has {} CPUs", threads, cpus, cpus));
    }
    omp_set_num_threads(threads);
}

namespace {

// The CPUs this process may run on. A launcher's binding can leave fewer than the machine has: mpirun binds each
// rank to one core when it starts 2 ranks or fewer.
int cpus_allowed() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpu_count();
    return std::max(1, CPU_COUNT(&allowed));
}

}  // namespace

void warn_if_oversubscribed(int threads, NodePlacement const& placement) {
    static int warned_for = 0;
    if (std::exchange(warned_for, threads) == threads) return;
    if (placement.node_rank != 0) return;
    int const cpus = cpu_count();
    char host[256] = "this machine";
    ::gethostname(host, sizeof host - 1);
    if (static_cast<long>(placement.node_ranks) * threads > cpus) {
        std::fputs(fmt::format("axonn: warning: {} rank(s) x {} thread(s) on {} oversubscribe its {} CPUs, so steps "
                               "will be slow: lower --threads or the ranks per node\n",
                               placement.node_ranks, threads, host, cpus)
                       .c_str(),
                   stderr);
    }
    if (int const allowed = cpus_allowed(); threads > allowed) {
        std::fputs(fmt::format("axonn: warning: --threads {} on a rank bound to {} CPU(s) of {}'s {} (its launcher's "
                               "binding: mpirun binds each rank to one core when it starts 2 ranks or fewer), so its "
                               "threads share them and steps will be slow: launch with `mpirun --bind-to none` or "
                               "`--map-by slot:PE={}`, or lower --threads\n",
                               threads, allowed, host, cpus, threads)
                       .c_str(),
                   stderr);
    }
}

}  // namespace axonn
