#include "axonn/train/threads.h"

#include "axonn/core/error.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>

namespace axonn {

int cpu_count() { return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }

void use_threads(int threads) {
    int const cpus = cpu_count();
    if (threads < 1 || threads > cpus) {
        throw UsageError(fmt::format("--threads {} is outside 1..{}: this machine has {} CPUs", threads, cpus, cpus));
    }
    omp_set_num_threads(threads);
}

}  // namespace axonn
