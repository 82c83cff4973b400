// Bulk conversion between fp32 and bf16 (the bf16 GEMM is gemm.h's).
#pragma once

#include "axonn/core/bfloat16.h"

#include <cstdint>

namespace axonn::cpu {

// out[n] = bf16(in[n]), rounded to nearest even                                              in[n] fp32
void to_bf16(bfloat16* out, float const* in, std::int64_t n);
// out[n] = float(in[n])                                                                       in[n] bf16
void to_f32(float* out, bfloat16 const* in, std::int64_t n);

}  // namespace axonn::cpu
