#include "axonn/kernels/cpu/tile_gemm.h"

#include <algorithm>
#include <array>
#include <utility>

#if defined(__AVX512F__) || defined(__AVX2__)
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
#define AXONN_TILE_GEMM_SIMD
// 32 registers of 16 floats: blocks of 6 rows × 4 vectors of C (64 columns) hold 24 accumulators, 4 vectors of a
// row of B and one broadcast of A, and each k costs 24 FMAs against 10 loads.
struct Simd {
    using Vector = __m512;
    using Mask = __mmask16;  // lanes 0 .. n-1 of a vector
    static constexpr int lanes = 16, max_rows = 6, max_vectors = 4;
    static Mask first(int n) { return static_cast<Mask>((1u << n) - 1u); }
    static Vector zero() { return _mm512_setzero_ps(); }
    static Vector broadcast(float x) { return _mm512_set1_ps(x); }
    static Vector load(float const* p) { return _mm512_loadu_ps(p); }
    static Vector load(float const* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store(float* p, Vector v) { _mm512_storeu_ps(p, v); }
    static void store(float* p, Mask m, Vector v) { _mm512_mask_storeu_ps(p, m, v); }
    static Vector fmadd(Vector a, Vector b, Vector c) { return _mm512_fmadd_ps(a, b, c); }
};
#elif defined(__AVX2__) && defined(__FMA__)
#define AXONN_TILE_GEMM_SIMD
// 16 registers of 8 floats: blocks of 6 rows × 2 vectors of C (16 columns) hold 12 accumulators, 2 vectors of a
// row of B and one broadcast of A, and each k costs 12 FMAs against 8 loads.
struct Simd {
    using Vector = __m256;
    using Mask = __m256i;  // lanes 0 .. n-1 of a vector: all bits set in those lanes
    static constexpr int lanes = 8, max_rows = 6, max_vectors = 2;
    static Mask first(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static Vector zero() { return _mm256_setzero_ps(); }
    static Vector broadcast(float x) { return _mm256_set1_ps(x); }
    static Vector load(float const* p) { return _mm256_loadu_ps(p); }
    static Vector load(float const* p, Mask m) { return _mm256_maskload_ps(p, m); }
    static void store(float* p, Vector v) { _mm256_storeu_ps(p, v); }
    static void store(float* p, Mask m, Vector v) { _mm256_maskstore_ps(p, m, v); }
    static Vector fmadd(Vector a, Vector b, Vector c) { return _mm256_fmadd_ps(a, b, c); }
};
#endif

#if defined(AXONN_TILE_GEMM_SIMD)
// One block of C, rows × (lanes·vectors) columns, of which the last vector's first `last` lanes are C's. Only a
// ragged block masks its last vector's loads and stores: AVX2's masked moves cost more than plain ones (on AMD's
// Zen 3 a masked store is microcoded).
template <int rows, int vectors, bool ragged>
void block(int K, float const* A, std::int64_t a_row, std::int64_t a_col, float const* B, std::int64_t ldb,
           float beta, float* C, std::int64_t ldc, int last) {
    Simd::Mask const tail = Simd::first(last);
    Simd::Vector sum[rows][vectors];
    // Every loop over rows and vectors unrolled, so that the accumulators live in registers, not on the stack.
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < vectors; ++v) sum[r][v] = Simd::zero();
    for (int k = 0; k < K; ++k) {
        float const* b = B + k * ldb;
        Simd::Vector b_row[vectors];
#pragma GCC unroll 8
        for (int v = 0; v + 1 < vectors; ++v) b_row[v] = Simd::load(b + v * Simd::lanes);
        float const* b_last = b + (vectors - 1) * Simd::lanes;
        b_row[vectors - 1] = ragged ? Simd::load(b_last, tail) : Simd::load(b_last);
        float const* a = A + k * a_col;
#pragma GCC unroll 8
        for (int r = 0; r < rows; ++r) {
            Simd::Vector const a_rk = Simd::broadcast(a[r * a_row]);
#pragma GCC unroll 8
            for (int v = 0; v < vectors; ++v) sum[r][v] = Simd::fmadd(a_rk, b_row[v], sum[r][v]);
        }
    }
    Simd::Vector const beta_v = Simd::broadcast(beta);
#pragma GCC unroll 8
    for (int r = 0; r < rows; ++r) {
#pragma GCC unroll 8
        for (int v = 0; v < vectors; ++v) {
            float* c = C + r * ldc + v * Simd::lanes;
            Simd::Vector result = sum[r][v];
            if (ragged && v + 1 == vectors) {
                if (beta != 0.0f) result = Simd::fmadd(beta_v, Simd::load(c, tail), result);
                Simd::store(c, tail, result);
            } else {
                if (beta != 0.0f) result = Simd::fmadd(beta_v, Simd::load(c), result);
                Simd::store(c, result);
            }
        }
    }
}

using BlockKernel = void (*)(int, float const*, std::int64_t, std::int64_t, float const*, std::int64_t, float, float*,
                             std::int64_t, int);
using KernelsOfRows = std::array<BlockKernel, Simd::max_vectors>;
using KernelsOfSizes = std::array<KernelsOfRows, Simd::max_rows>;

template <bool ragged, int rows, int... vectors>
constexpr KernelsOfRows blocks_of_rows(std::integer_sequence<int, vectors...>) {
    return {block<rows, vectors + 1, ragged>...};
}
template <bool ragged, int... rows> constexpr KernelsOfSizes every_block(std::integer_sequence<int, rows...>) {
    return {blocks_of_rows<ragged, rows + 1>(std::make_integer_sequence<int, Simd::max_vectors>())...};
}
// kernels[ragged][rows - 1][vectors - 1]: the blocks at the bottom and right edges get kernels of their own size.
constexpr std::array<KernelsOfSizes, 2> kernels{every_block<false>(std::make_integer_sequence<int, Simd::max_rows>()),
                                                every_block<true>(std::make_integer_sequence<int, Simd::max_rows>())};

void blocked(int M, int N, int K, float const* A, std::int64_t a_row, std::int64_t a_col, float const* B,
             std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
    constexpr int lanes = Simd::lanes, panel = Simd::max_vectors * lanes;
    // A panel of B (K × panel) stays in L1 while every block of rows passes over it.
    for (int j0 = 0; j0 < N; j0 += panel) {
        int const columns = std::min(panel, N - j0), vectors = (columns + lanes - 1) / lanes;
        int const last = columns - (vectors - 1) * lanes;
        for (int i0 = 0; i0 < M; i0 += Simd::max_rows) {
            int const rows = std::min(Simd::max_rows, M - i0);
            BlockKernel const kernel = kernels[last < lanes][rows - 1][vectors - 1];
            kernel(K, A + i0 * a_row, a_row, a_col, B + j0, ldb, beta, C + i0 * ldc + j0, ldc, last);
        }
    }
}
#endif

#if defined(__AVX512F__)
constexpr int lanes = Simd::lanes;

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
#if defined(AXONN_TILE_GEMM_SIMD)
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
