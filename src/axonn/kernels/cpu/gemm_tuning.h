// GEMM layout tuning, as AxoNN does it: one product can be computed in more than one way, which way is fastest
// depends on the shape, the library and the machine, so each shape's ways are timed once, the first time the shape
// is met, and the winner is used from then on.
//
// The ways here:
// - whole: the product in one library call.
// - inner_chunks: the inner dimension K cut into chunks of kInnerChunk whose products are summed into C. oneDNN's
//   blocking of a very long inner dimension is what makes the LM head's input gradient (dlogits[B·T, Vp] ·
//   wte[Vp, C], K = 50,304) run 20% below the other GEMMs in bf16 on the machines measured; chunks of 8,192 bring
//   it back to their rate (docs/PERFORMANCE.md). A candidate where K spans two chunks.
// - padded_b: B copied into a scratch whose rows are kPaddedRowFloats longer than the matrix's, then one call.
//   A weight's rows (768 or 3,072 floats: a multiple of 256 bytes apart) share a few cache sets, and oneDNN's AVX2
//   kernel for few rows (its "no-copy" kernel, taken for M up to about 260 whatever the stride) reads B in place:
//   on a Zen 3 core the input gradient of GPT-2 small's MLP projection (dY[256, 768] · W[768, 3,072]) ran at 44
//   GFLOP/s in place and at 77 from the padded copy, the copy (about 1 ms) included (docs/PERFORMANCE.md). A
//   candidate for fp32 products whose A is not transposed (the forward's and the input gradients', M a batch's
//   rows; the weight gradients' M is a weight's rows, and they never gained) with kTimedMinWork multiply-adds and
//   a copy of B of at most kPaddedMaxBytes.
// - column_halves: C's columns in two halves, one library call each. oneDNN 2.6 runs a bf16 matmul on AMX only
//   when its three matrices are dense, and half of C is not (its rows are C's, longer than the half), so the
//   halves run on its AVX-512 kernel (gemm:jit). On an Intel Xeon with AMX, one core, at GPT-2 small's shapes for
//   2,048 rows, that kernel was 15-25% faster than AMX's for the products with 768 output columns (every weight
//   gradient, whose A the AMX kernel reads transposed block by block; the forward of the two projections into the
//   residual; the input gradients of qkv and of the MLP's first Linear) and 20-35% slower for the wide ones
//   (docs/PERFORMANCE.md). A candidate for bf16 products of at least kTimedMinWork multiply-adds and two vectors
//   of columns.
// Transposed products (Cᵀ = op(B)ᵀ·op(A)ᵀ, then a transpose) were measured too and never won, so they are not
// candidates. A shape with one candidate is never timed. The ways compute the same products; chunks sum them in
// another order, and a padded B or a half of C can lead oneDNN to another kernel (it picks its kernel by stride),
// which may sum in another order too.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <functional>
#include <vector>

namespace axonn::cpu {

inline constexpr std::int64_t kInnerChunk = 8192;
// 16 floats: one 64-byte line, so that consecutive rows of the copy fall in different cache sets.
inline constexpr std::int64_t kPaddedRowFloats = 16;
// 2^26 multiply-adds (1.5 ms on a core at 90 GFLOP/s): smaller products are not worth a copy, a split or a timing.
inline constexpr std::int64_t kTimedMinWork = std::int64_t{1} << 26;
// The copy's scratch is kept for the rest of the run (one per thread that multiplies): at most 64 MiB.
inline constexpr std::int64_t kPaddedMaxBytes = std::int64_t{64} << 20;

enum class GemmVariant { whole, inner_chunks, padded_b, column_halves };
char const* gemm_variant_name(GemmVariant variant);  // "whole", "chunked", "padded", "halves"

struct GemmShape {
    bool bf16;  // bf16 inputs, else fp32
    bool transpose_a, transpose_b;
    std::int64_t M, N, K;
    auto operator<=>(GemmShape const&) const = default;
};

struct GemmTuning {
    GemmShape shape;
    double whole_s, chunks_s, padded_s, halves_s;  // the best of two timed runs each; 0 for a way not a candidate
    GemmVariant chosen;
};

// The ways worth timing for `shape`, whole first.
std::vector<GemmVariant> gemm_candidates(GemmShape const& shape);

// Process-wide switch (on by default). Off: every product runs whole, so that two runs of a program are bitwise
// equal whatever the timings (tuned, the choice can differ between runs where two ways are about as fast).
void set_gemm_tuning(bool on);
// Every shape timed so far, in the order met.
std::vector<GemmTuning> gemm_tunings();

// The way to compute `shape`: whole if it is the only candidate or tuning is off; else the remembered choice, or,
// the first time, the fastest candidate, each run_into(way, out) timed into an [M,N] output (the call's own inputs,
// beta 0): `overwritten`, the call's own C where the call overwrites a dense C (beta 0, row stride N), which the
// chosen way then writes again; else a scratch that raises the run's peak memory by M·N floats for the moment (the
// LM head's logits are 200 MB at GPT-2's vocabulary and 1,024 rows). Another way must beat the whole product by
// more than 3%, about the timing noise here: where the ways are as fast, the whole product stays, and runs rarely
// differ in their choice.
GemmVariant gemm_variant(GemmShape const& shape, float* overwritten,
                         std::function<void(GemmVariant, float*)> const& run_into);

// Where inner index k0 starts in A (op(A) is [M,K]: columns of A, or rows of a transposed A) and in B (op(B) is
// [K,N]: rows of B, or columns of a transposed B).
template <typename T> T const* inner_slice_a(T const* A, std::int64_t lda, bool transpose_a, std::int64_t k0) {
    return A + (transpose_a ? k0 * lda : k0);
}
template <typename T> T const* inner_slice_b(T const* B, std::int64_t ldb, bool transpose_b, std::int64_t k0) {
    return B + (transpose_b ? k0 : k0 * ldb);
}

// Where column_halves cuts C's N columns (N ≥ 2): the first half is whole vectors of 16 floats where N allows.
inline std::int64_t half_of_columns(std::int64_t N) { return std::min((N / 2 + 15) / 16 * 16, N - 1); }

// Where column j0 starts in B (op(B) is [K,N]: columns of B, or rows of a transposed B).
template <typename T> T const* column_slice_b(T const* B, std::int64_t ldb, bool transpose_b, std::int64_t j0) {
    return B + (transpose_b ? j0 * ldb : j0);
}

// C = op(A)·op(B) (+ beta·C) the given way: part(k0, k, j0, j1, beta) computes columns j0 ... j1−1 of the product
// over inner indices k0 ... k0+k−1 with that beta; chunks after the first add to C. padded_b runs whole here: its
// copy of B is the caller's (gemm.cpp).
template <typename Part>
void run_gemm_variant(GemmVariant variant, std::int64_t N, std::int64_t K, float beta, Part&& part) {
    std::int64_t const first = 0;
    if (variant == GemmVariant::inner_chunks) {
        for (std::int64_t k0 = 0; k0 < K; k0 += kInnerChunk) {
            part(k0, K - k0 < kInnerChunk ? K - k0 : kInnerChunk, first, N, k0 == 0 ? beta : 1.0f);
        }
    } else if (variant == GemmVariant::column_halves && N >= 2) {
        std::int64_t const half = half_of_columns(N);
        part(first, K, first, half, beta);
        part(first, K, half, N, beta);
    } else {
        part(first, K, first, N, beta);
    }
}

}  // namespace axonn::cpu
