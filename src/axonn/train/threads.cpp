#include "axonn/train/threads.h"

#include "axonn/core/error.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

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

void warn_if_oversubscribed(int threads, NodePlacement const& placement) {
    static int warned_for = 0;
    if (std::exchange(warned_for, threads) == threads) return;
    int const cpus = cpu_count();
    if (placement.node_rank != 0 || static_cast<long>(placement.node_ranks) * threads <= cpus) return;
    char host[256] = "this machine";
    ::gethostname(host, sizeof host - 1);
    std::fputs(fmt::format("axonn: warning: {} rank(s) x {} thread(s) on {} oversubscribe its {} CPUs, so steps "
                           "will be slow: lower --threads or the ranks per node\n",
                           placement.node_ranks, threads, host, cpus)
                   .c_str(),
               stderr);
}

}  // namespace axonn
