// The bf16 side of the CPU kernels: bulk conversion between fp32 and bf16, and the GEMM with bf16 inputs and an
// fp32 result (fp32 accumulation), by oneDNN's matmul (brgemm kernels on CPUs with avx512_bf16).
#pragma once

#include "axonn/core/bfloat16.h"

#include <cstdint>
#include <string>

namespace axonn::cpu {

// out[n] = bf16(in[n]), rounded to nearest even                                              in[n] fp32
void to_bf16(bfloat16* out, float const* in, std::int64_t n);
// out[n] = float(in[n])                                                                       in[n] bf16
void to_f32(float* out, bfloat16 const* in, std::int64_t n);

// C[M,N] = op(A) · op(B) + beta · C, row-major with row strides as in gemm.h; A and B bf16, C fp32, beta 0 or 1.
void gemm_bf16(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, bfloat16 const* A,
               std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);

// Whether this CPU and oneDNN have a fast bf16 GEMM (not oneDNN's reference kernel), and if not, why.
struct Bf16Support {
    bool available;
    std::string reason;  // "brg:avx512_core_bf16", or why not
};
Bf16Support bf16_gemm_support();

}  // namespace axonn::cpu
