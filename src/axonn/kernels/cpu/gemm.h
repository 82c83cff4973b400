// General matrix multiply, row-major: C[M,N] = alpha · op(A) · op(B) + beta · C.
// op(A) is [M,K] (A is [M,K], or [K,M] when transpose_a); op(B) is [K,N] (B is [K,N], or [N,K] when transpose_b).
// lda, ldb, ldc are row strides, so a GEMM can run on a column block of a wider matrix (one attention head
// inside the fused QKV activation). float goes to oneDNN; double is a plain loop nest for the
// finite-difference tests, where speed does not matter and exactness does.
#pragma once

#include "axonn/kernels/cpu/gemm_tuning.h"

#include <cstdint>

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

}  // namespace axonn::cpu
