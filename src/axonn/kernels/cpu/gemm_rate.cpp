#include "axonn/kernels/cpu/gemm_rate.h"

#include "axonn/core/timer.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <vector>

namespace axonn {
namespace {

// The widest vector ISA this CPU offers to oneDNN's fp32/bf16 kernels. (dnnl_get_effective_cpu_isa reports the
// most the library may use, not what the CPU has, so it would claim AMX on a machine without it.)
std::string cpu_isa_name() {
    if (__builtin_cpu_supports("avx512bf16")) return "avx512_core_bf16";
    if (__builtin_cpu_supports("avx512f")) return "avx512_core";
    if (__builtin_cpu_supports("avx2")) return "avx2";
    return "sse4.1 or older";
}

}  // namespace

GemmRate measure_single_core_gemm_rate(DType precision) {
    // 2048³ is large enough to reach the kernel's steady state (1024³ reads 10-20% low here) and takes
    // about 0.1 s a repetition; the best repetition is the rate the hardware can sustain.
    constexpr std::int64_t n = 2048;
    constexpr int repetitions = 4;  // the first warms the caches and the JIT
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
    std::vector<bfloat16> a16(precision == DType::bf16 ? n * n : 0, to_bfloat16(1.0f)), b16(a16.size(), to_bfloat16(0.5f));
    int const threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double best_seconds = 1e30;
    for (int i = 0; i < repetitions; ++i) {
        Stopwatch watch;
        if (precision == DType::bf16) {
            cpu::gemm_bf16(false, false, n, n, n, a16.data(), n, b16.data(), n, 0.0f, c.data(), n);
        } else {
            cpu::gemm<float>(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        }
        if (i > 0) best_seconds = std::min(best_seconds, watch.seconds());
    }
    omp_set_num_threads(threads);
    return {2.0 * n * n * n / best_seconds, cpu_isa_name()};
}

}  // namespace axonn
