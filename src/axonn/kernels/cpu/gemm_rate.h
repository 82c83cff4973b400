// The machine's measured GEMM rate on one core, fp32 or bf16 (bf16 inputs, fp32 results): the denominator of MFU
// on a CPU. Measuring it at start-up, rather than quoting a datasheet, makes MFU honest on whatever machine runs it.
#pragma once

#include "axonn/core/tensor.h"

#include <string>

namespace axonn {

struct GemmRate {
    double flops_per_s;  // best of three 2048³ single-threaded GEMMs
    std::string isa;     // the instruction set oneDNN dispatched to
};

// precision: f32, or bf16 (which the caller has checked the CPU runs: cpu::bf16_gemm_support()).
GemmRate measure_single_core_gemm_rate(DType precision = DType::f32);

}  // namespace axonn
