// The OpenMP threads of a rank, bounded by what the machine can run: more threads than CPUs only slow a run down,
// and tens of thousands hang or crash the OpenMP runtime.
#pragma once

namespace axonn {

int cpu_count();  // the machine's online CPUs

// Checks `threads` (a --threads value: 1 to cpu_count()) and makes it OpenMP's thread count; a bad value is an
// axonn::UsageError.
void use_threads(int threads);

// Collective over MPI_COMM_WORLD: when the ranks on one machine run more threads in all than it has CPUs, its
// first rank prints a one-line warning (the run goes on, slowly: threads then wait for each other's CPUs), once per
// process and thread count: `axonn tune`, which times several grids, says it once.
void warn_if_oversubscribed(int threads);

}  // namespace axonn
