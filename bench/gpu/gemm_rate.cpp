// gpu_gemm_rate: the GPU's measured GEMM rate in fp32 and bf16 through the backend's cuBLASLt path, one JSON line
// each: {"precision": "bf16", "n": 8192, "tflops": ...}. scripts/gpu-check records it beside the model's MFU.
//   gpu_gemm_rate [n]      n: the product's size (default 8192)
#include "axonn/core/error.h"
#include "axonn/kernels/cuda/gemm_rate.h"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    try {
        std::int64_t const n = argc > 1 ? std::stoll(argv[1]) : 8192;
        axonn::require(n > 0 && n <= 32768, "a GEMM size of {} is out of range: give 1 ... 32768", n);
        for (axonn::DType const precision : {axonn::DType::f32, axonn::DType::bf16}) {
            axonn::cuda::GpuGemmRate const rate = axonn::cuda::measure_gemm_rate(precision, n);
            fmt::print("{{\"precision\": \"{}\", \"n\": {}, \"tflops\": {:.1f}}}\n", axonn::precision_name(precision),
                       rate.n, rate.flops_per_s / 1e12);
        }
        return EXIT_SUCCESS;
    } catch (std::exception const& error) {
        fmt::print(stderr, "gpu_gemm_rate: {}\n", error.what());
        return EXIT_FAILURE;
    }
}
