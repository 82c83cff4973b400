// The machine's measured fp32 GEMM rate on one core: the denominator of MFU on a CPU (docs/peers.md §5.4).
// Measuring it at start-up, rather than quoting a datasheet, makes MFU honest on whatever machine runs it.
#pragma once

#include <string>

namespace axonn {

struct GemmRate {
    double flops_per_s;  // best of three 2048³ single-threaded SGEMMs
    std::string isa;     // the instruction set oneDNN dispatched to
};

GemmRate measure_single_core_gemm_rate();

}  // namespace axonn
