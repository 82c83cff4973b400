#include "axonn/kernels/cpu/tile_gemm.h"

#include <algorithm>
#include <array>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace axonn::cpu {
namespace {

// The loop nest: i, k, then j, so that the innermost loop runs along rows of B and C.
template <typename T>
void loop_nest(int M, int N, int K, T const* A, std::int64_t a_row, std::int64_t a_col, T const* B,
               std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
    for (int i = 0; i < M; ++i) {
        T* c = C + i * ldc;
        for (int j = 0; j < N; ++j) c[j] = beta == T(0) ? T(0) : beta * c[j];
        for (int k = 0; k < K; ++k) {
            T const a = A[i * a_row + k * a_col];
            T const* b = B + k * ldb;
#pragma omp simd
            for (int j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}

// 16 rows at a time, so that the rows read stay in L1 while each of their columns is written out.
template <typename T> void transpose_loops(T* out, std::int64_t ld_out, T const* in, std::int64_t ld_in, int rows,
                                           int cols) {
    constexpr int rows_per_block = 16;
    for (int r0 = 0; r0 < rows; r0 += rows_per_block) {
        int const block_rows = std::min(rows_per_block, rows - r0);
        for (int c = 0; c < cols; ++c) {
            T* column = out + c * ld_out + r0;
            T const* source = in + r0 * ld_in + c;
            for (int r = 0; r < block_rows; ++r) column[r] = source[r * ld_in];
        }
    }
}

#if defined(__AVX512F__)
constexpr int max_rows = 6;     // rows of C per block
constexpr int max_vectors = 4;  // 16-float vectors of C per block row: 64 columns
constexpr int lanes = 16;

// One block of C, rows × (16·vectors) columns (the last vector masked by `tail`): 24 accumulators, 4 vectors of
// a row of B and one broadcast of A fit the 32 vector registers, and each k costs 24 FMAs against 10 loads.
template <int rows, int vectors>
void block(int K, float const* A, std::int64_t a_row, std::int64_t a_col, float const* B, std::int64_t ldb,
           float beta, float* C, std::int64_t ldc, __mmask16 tail) {
    __m512 sum[rows][vectors];
    // Every loop over rows and vectors unrolled, so that the accumulators live in registers, not on the stack.
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < vectors; ++v) sum[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < K; ++k) {
        float const* b = B + k * ldb;
        __m512 b_row[vectors];
#pragma GCC unroll 8
        for (int v = 0; v + 1 < vectors; ++v) b_row[v] = _mm512_loadu_ps(b + v * lanes);
        b_row[vectors - 1] = _mm512_maskz_loadu_ps(tail, b + (vectors - 1) * lanes);
        float const* a = A + k * a_col;
#pragma GCC unroll 8
        for (int r = 0; r < rows; ++r) {
            __m512 const a_rk = _mm512_set1_ps(a[r * a_row]);
#pragma GCC unroll 8
            for (int v = 0; v < vectors; ++v) sum[r][v] = _mm512_fmadd_ps(a_rk, b_row[v], sum[r][v]);
        }
    }
    __m512 const beta_v = _mm512_set1_ps(beta);
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r) {
#pragma GCC unroll 8
        for (int v = 0; v < vectors; ++v) {
            __mmask16 const mask = v + 1 < vectors ? __mmask16(0xFFFF) : tail;
            float* c = C + r * ldc + v * lanes;
            __m512 result = sum[r][v];
            if (beta != 0.0f) result = _mm512_fmadd_ps(beta_v, _mm512_maskz_loadu_ps(mask, c), result);
            _mm512_mask_storeu_ps(c, mask, result);
        }
    }
}

using BlockKernel = void (*)(int, float const*, std::int64_t, std::int64_t, float const*, std::int64_t, float, float*,
                             std::int64_t, __mmask16);

template <int rows> constexpr std::array<BlockKernel, max_vectors> blocks_of_rows() {
    return {block<rows, 1>, block<rows, 2>, block<rows, 3>, block<rows, 4>};
}
// kernels[rows - 1][vectors - 1]: the ragged blocks at the bottom and right edges get kernels of their own size.
constexpr std::array<std::array<BlockKernel, max_vectors>, max_rows> kernels{
    blocks_of_rows<1>(), blocks_of_rows<2>(), blocks_of_rows<3>(),
    blocks_of_rows<4>(), blocks_of_rows<5>(), blocks_of_rows<6>()};

void blocked(int M, int N, int K, float const* A, std::int64_t a_row, std::int64_t a_col, float const* B,
             std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
    constexpr int panel = max_vectors * lanes;
    // A panel of B (K × 64) stays in L1 while every block of rows passes over it.
    for (int j0 = 0; j0 < N; j0 += panel) {
        int const columns = std::min(panel, N - j0), vectors = (columns + lanes - 1) / lanes;
        int const last = columns - (vectors - 1) * lanes;
        auto const tail = static_cast<__mmask16>((1u << last) - 1u);
        for (int i0 = 0; i0 < M; i0 += max_rows) {
            int const rows = std::min(max_rows, M - i0);
            kernels[rows - 1][vectors - 1](K, A + i0 * a_row, a_row, a_col, B + j0, ldb, beta, C + i0 * ldc + j0,
                                           ldc, tail);
        }
    }
}

// GCC 12's unpack intrinsics start from a vector initialised with itself (_mm512_undefined_ps), which its
// -Wmaybe-uninitialized reports wherever they are inlined: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// A 16 × 16 block in registers: rows[r] in, rows[c] = column c out. Unpacks interleave pairs of rows, then pairs
// of pairs; the two lane shuffles gather the four 128-bit quarters.
void transpose_in_registers(__m512 (&rows)[lanes]) {
    __m512 pairs[lanes];
    for (int i = 0; i < lanes; i += 2) {
        pairs[i] = _mm512_unpacklo_ps(rows[i], rows[i + 1]);
        pairs[i + 1] = _mm512_unpackhi_ps(rows[i], rows[i + 1]);
    }
    __m512 quads[lanes];
    for (int i = 0; i < lanes; i += 4) {
        for (int j = 0; j < 2; ++j) {
            __m512d const low = _mm512_castps_pd(pairs[i + j]), high = _mm512_castps_pd(pairs[i + j + 2]);
            quads[i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(low, high));
            quads[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(low, high));
        }
    }
    __m512 halves[lanes];
    for (int i = 0; i < lanes; i += 8) {
        for (int j = 0; j < 4; ++j) {
            halves[i + j] = _mm512_shuffle_f32x4(quads[i + j], quads[i + j + 4], 0x88);
            halves[i + j + 4] = _mm512_shuffle_f32x4(quads[i + j], quads[i + j + 4], 0xdd);
        }
    }
    for (int j = 0; j < 8; ++j) {
        rows[j] = _mm512_shuffle_f32x4(halves[j], halves[j + 8], 0x88);
        rows[j + 8] = _mm512_shuffle_f32x4(halves[j], halves[j + 8], 0xdd);
    }
}

// The same as transpose_loops, 16 × 16 blocks at a time (ragged edges masked).
void transpose_blocks(float* out, std::int64_t ld_out, float const* in, std::int64_t ld_in, int rows, int cols) {
    for (int r0 = 0; r0 < rows; r0 += lanes) {
        int const block_rows = std::min(lanes, rows - r0);
        auto const row_mask = static_cast<__mmask16>((1u << block_rows) - 1u);
        for (int c0 = 0; c0 < cols; c0 += lanes) {
            int const block_cols = std::min(lanes, cols - c0);
            auto const col_mask = static_cast<__mmask16>((1u << block_cols) - 1u);
            __m512 block[lanes];
            for (int r = 0; r < lanes; ++r) {
                block[r] = r < block_rows ? _mm512_maskz_loadu_ps(col_mask, in + (r0 + r) * ld_in + c0)
                                          : _mm512_setzero_ps();
            }
            transpose_in_registers(block);
            for (int c = 0; c < block_cols; ++c) {
                _mm512_mask_storeu_ps(out + (c0 + c) * ld_out + r0, row_mask, block[c]);
            }
        }
    }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

template <>
void tile_gemm<float>(int M, int N, int K, float const* A, std::int64_t a_row, std::int64_t a_col, float const* B,
                      std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
#if defined(__AVX512F__)
    blocked(M, N, K, A, a_row, a_col, B, ldb, beta, C, ldc);
#else
    loop_nest(M, N, K, A, a_row, a_col, B, ldb, beta, C, ldc);
#endif
}

template <>
void tile_gemm<double>(int M, int N, int K, double const* A, std::int64_t a_row, std::int64_t a_col,
                       double const* B, std::int64_t ldb, double beta, double* C, std::int64_t ldc) {
    loop_nest(M, N, K, A, a_row, a_col, B, ldb, beta, C, ldc);
}

template <>
void transpose<float>(float* out, std::int64_t ld_out, float const* in, std::int64_t ld_in, int rows, int cols) {
#if defined(__AVX512F__)
    transpose_blocks(out, ld_out, in, ld_in, rows, cols);
#else
    transpose_loops(out, ld_out, in, ld_in, rows, cols);
#endif
}

template <>
void transpose<double>(double* out, std::int64_t ld_out, double const* in, std::int64_t ld_in, int rows, int cols) {
    transpose_loops(out, ld_out, in, ld_in, rows, cols);
}

}  // namespace axonn::cpu
