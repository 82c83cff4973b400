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

// The best of three single-threaded n³ GEMMs (after one that warms the caches and the JIT), in FLOP/s.
double best_square_gemm_rate(DType precision, std::int64_t n) {
    constexpr int repetitions = 4;
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
    std::vector<bfloat16> a16(precision == DType::bf16 ? n * n : 0, to_bfloat16(1.0f)), b16(a16.size(), to_bfloat16(0.5f));
    double best_seconds = 1e30;
    for (int i = 0; i < repetitions; ++i) {
        Stopwatch watch;
        // The library's own call, untuned: the rate MFU divides by is oneDNN's, not a layout the tuner chose.
        if (precision == DType::bf16) {
            cpu::gemm_bf16_way(cpu::GemmVariant::whole, false, false, n, n, n, a16.data(), n, b16.data(), n, 0.0f,
                               c.data(), n);
        } else {
            cpu::gemm_way(cpu::GemmVariant::whole, false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                          c.data(), n);
        }
        if (i > 0) best_seconds = std::min(best_seconds, watch.seconds());
    }
    return 2.0 * static_cast<double>(n * n * n) / best_seconds;
}

}  // namespace

GemmRate measure_single_core_gemm_rate(DType precision) {
    // No one size shows every machine's best: on a Zen 5 core fp32 1024³ read 10-20% below 2048³, on an Intel
    // Xeon with AMX bf16 2048³ read 40% below 512³ (839 against 479 GFLOP/s; PyTorch's own 1024³ reached 805).
    // The best of the three is the rate the core's GEMM can sustain, a fair denominator for MFU.
    int const threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double best = 0;
    for (std::int64_t const n : {512, 1024, 2048}) best = std::max(best, best_square_gemm_rate(precision, n));
    omp_set_num_threads(threads);
    if (precision != DType::bf16) return {best, cpu_isa_name()};
    cpu::Bf16Support const support = cpu::bf16_gemm_support();
    return {best, support.native ? support.reason : "emulated on " + cpu_isa_name() + " fp32"};
}

}  // namespace axonn
