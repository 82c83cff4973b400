// The OpenMP threads of a rank, bounded by what the machine can run: more threads than CPUs only slow a run down,
// and tens of thousands hang or crash the OpenMP runtime.
#pragma once

#include "axonn/comm/node_placement.h"

namespace axonn {

// Checks `threads` (a --threads value: 1 to cpu_count()) and makes it OpenMP's thread count; a bad value is an
// axonn::UsageError.
void use_threads(int threads);

// When the ranks on one machine (`placement`) run more threads in all than it has CPUs, or its first rank is bound
// to fewer CPUs than it runs threads (mpirun's binding), that rank prints a one-line warning for each (the run goes
// on, slowly: threads then wait for each other's CPUs), once per process and thread count: `axonn tune`, which
// times several grids, says it once.
void warn_if_oversubscribed(int threads, NodePlacement const& placement);

}  // namespace axonn
