// The GEMM of fused attention's tiles: C[M,N] = A·B + beta·C for products of at most a few hundred rows and
// columns, with B row-major and A at any strides (so Aᵀ is free). A library GEMM spends microseconds per call on
// dispatch and on packing its operands, as long as the tile's arithmetic itself takes at GPT-2's head size; this
// one packs nothing and runs straight into registers. float runs a register-blocked kernel of the instruction set
// the compiler targets (-march=native): AVX-512 blocks of 6 rows × 64 columns, AVX2 blocks of 6 rows × 16
// columns, a loop nest without either; double (the finite-difference tests) always runs the loop nest.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// C[M,N] = A[M,K]·B[K,N] + beta·C. A's element (i, k) lives at A[i·a_row + k·a_col]: (a_row, a_col) = (lda, 1)
// for a row-major A, (1, lda) for the transpose of a row-major [K,M] matrix. B has row stride ldb, C row stride
// ldc. beta = 0 writes C without reading it.
template <typename T>
void tile_gemm(int M, int N, int K, T const* A, std::int64_t a_row, std::int64_t a_col, T const* B,
               std::int64_t ldb, T beta, T* C, std::int64_t ldc);

// out[c, r] = in[r, c] for a rows × cols block (row strides ld_in and ld_out): packs a B operand that tile_gemm
// must read transposed. float moves 16 × 16 blocks through registers where AVX-512 is there.
template <typename T>
void transpose(T* out, std::int64_t ld_out, T const* in, std::int64_t ld_in, int rows, int cols);

}  // namespace axonn::cpu
