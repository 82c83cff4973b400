// gpu_gemm_rate: the GPU's measured GEMM rate in fp32 and bf16 through the backend's cuBLASLt path, one JSON line
// each: {"precision": "bf16", "n": 8192, "tflops": ...}. scripts/gpu-check records it beside the model's MFU.
//   gpu_gemm_rate [n]      n: the product's size (default 8192)
#include "axonn/core/error.h"
#include "axonn/kernels/cuda/cuda_backend.h"
#include "axonn/kernels/cuda/gemm_rate.h"
#include "axonn/kernels/cuda/gpu_choice.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <exception>
#include <string_view>

int main(int argc, char** argv) {
    try {
        std::int64_t n = 8192;
        if (argc > 1) {
            std::string_view const text = argv[1];
            auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
            AXONN_REQUIRE(error == std::errc() && end == text.data() + text.size() && n > 0 && n <= 32768,
                          "a GEMM size of '{}' is not one of 1 ... 32768", text);
        }
        // The backend selects the GPU and installs the allocator of the device tensors the products use.
        axonn::CudaBackend const backend(axonn::DType::f32, axonn::cuda::local_device());
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
