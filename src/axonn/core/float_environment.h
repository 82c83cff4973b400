// Denormal (subnormal) numbers, below 2^-126 in fp32, take a microcode assist on many x86 CPUs: an FMA that reads
// or writes one can cost a hundred times a normal one. Gradients that shrink towards zero late in a run, or in a
// model whose last norm scales its output down, become denormal by the million and can slow a step many times
// over. Training has no use for them, so axonn flushes them on every thread that computes: results that would be
// denormal become zero (flush-to-zero, FTZ) and denormal inputs are read as zero (denormals-are-zero, DAZ), as
// GPUs and PyTorch's set_flush_denormal(True) do. The control word is per thread: a thread made by a thread that
// flushes inherits it (the kernel copies it at clone), the others are set here.
#pragma once

namespace axonn {

// Sets FTZ and DAZ on the calling thread and on each thread of the OpenMP team a parallel region now gets
// (omp_get_max_threads()); threads OpenMP adds later come from these and inherit it. `flush` false clears both
// (for benchmarks that measure what flushing saves).
void flush_denormals(bool flush = true);

// Whether the calling thread has both FTZ and DAZ set (false on a CPU without the controls).
bool denormals_flushed_on_this_thread();

}  // namespace axonn
