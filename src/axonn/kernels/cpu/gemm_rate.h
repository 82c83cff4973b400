// The machine's measured GEMM rate on one core, fp32 or bf16 (bf16 inputs, fp32 results): the denominator of MFU
// on a CPU. Measuring it at start-up, rather than quoting a datasheet, makes MFU honest on whatever machine runs it.
#pragma once

#include "axonn/core/tensor.h"

#include <string>

namespace axonn {

struct GemmRate {
    double flops_per_s;  // the best single-threaded GEMM of 512³, 1024³ and 2048³, three runs each
    std::string isa;     // the instruction set the GEMMs ran on
};

// precision: f32, or bf16 (which the caller has checked the CPU runs: cpu::bf16_gemm_support()).
GemmRate measure_single_core_gemm_rate(DType precision = DType::f32);

}  // namespace axonn
