// The GPU's measured GEMM rate, fp32 or bf16 (bf16 inputs, fp32 accumulation and results), through the same
// cuBLASLt path the backend's GEMMs take: the denominator of a measured MFU beside the datasheet's peak.
#pragma once

#include "axonn/core/tensor.h"

#include <cstdint>

namespace axonn::cuda {

struct GpuGemmRate {
    std::int64_t n;      // an n×n×n product
    double flops_per_s;  // the mean of 10 timed products after 3 untimed ones, on random operands
};

// On the current GPU, in device tensors: a CudaBackend (which installs their allocator) must exist.
GpuGemmRate measure_gemm_rate(DType precision, std::int64_t n = 8192);

}  // namespace axonn::cuda
