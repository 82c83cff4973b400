// General matrix multiply, row-major: C[M,N] = alpha · op(A) · op(B) + beta · C, in fp32 and with bf16 inputs
// (fp32 accumulation and result, oneDNN's matmul: brgemm kernels on CPUs with avx512_bf16).
// op(A) is [M,K] (A is [M,K], or [K,M] when transpose_a); op(B) is [K,N] (B is [K,N], or [N,K] when transpose_b).
// lda, ldb, ldc are row strides, so a GEMM can run on a column block of a wider matrix (one attention head
// inside the fused QKV activation). float goes to oneDNN; double is a plain loop nest for the
// finite-difference tests, where speed does not matter and exactness does.
#pragma once

#include "axonn/core/bfloat16.h"
#include "axonn/kernels/cpu/gemm_tuning.h"

#include <cstdint>
#include <string>

namespace axonn::cpu {

template <typename T>
void gemm(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, T const* A,
          std::int64_t lda, T const* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc);

// The fp32 product computed the given way (gemm_tuning.h), untimed: gemm<float> runs the way its shape's tuning
// chose, and the tests run each way.
void gemm_way(GemmVariant way, bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
              float alpha, float const* A, std::int64_t lda, float const* B, std::int64_t ldb, float beta, float* C,
              std::int64_t ldc);

// Name and ISA of the GEMM library, for the start-up banner.
char const* gemm_library_name();

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
