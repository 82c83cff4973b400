// GEMM layout tuning, as AxoNN does it: one product can be computed in more than one way, which way is fastest
// depends on the shape, the library and the machine, so each shape's ways are timed once, the first time the shape
// is met, and the winner is used from then on.
//
// The ways here: the whole product in one library call, or its inner dimension K cut into chunks of
// kInnerChunk whose products are summed into C. oneDNN's blocking of a very long inner dimension is what makes the
// LM head's input gradient (dlogits[B·T, Vp] · wte[Vp, C], K = 50,304) run 20% below the other GEMMs in bf16 on
// the machines measured; chunks of 8,192 bring it back to their rate (docs/PERFORMANCE.md). Transposed products
// (Cᵀ = op(B)ᵀ·op(A)ᵀ, then a transpose) were measured too and never won, so they are not candidates. Shapes whose
// K is under two chunks have one way only and are never timed. Both ways compute the same product and differ only
// in the order of the fp32 sums.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <vector>

namespace axonn::cpu {

inline constexpr std::int64_t kInnerChunk = 8192;

enum class GemmVariant { whole, inner_chunks };

struct GemmShape {
    bool bf16;  // bf16 inputs, else fp32
    bool transpose_a, transpose_b;
    std::int64_t M, N, K;
    auto operator<=>(GemmShape const&) const = default;
};

struct GemmTuning {
    GemmShape shape;
    double whole_s, chunks_s;  // the best of two timed runs each
    GemmVariant chosen;
};

// Process-wide switch (on by default). Off: every product runs whole, so that two runs of a program are bitwise
// equal whatever the timings (tuned, the choice can differ between runs where two ways are about as fast).
void set_gemm_tuning(bool on);
// Every shape timed so far, in the order met.
std::vector<GemmTuning> gemm_tunings();

// The way to compute `shape`: whole if K is short or tuning is off; else the remembered choice, or, the first
// time, the faster of run_into(way, scratch) timed into a scratch [M,N] output (the call's own inputs, beta 0).
// Chunks must win by more than 3%, about the timing noise here: where the two ways are as fast, the whole product
// stays, and runs rarely differ in their choice.
GemmVariant gemm_variant(GemmShape const& shape, std::function<void(GemmVariant, float*)> const& run_into);

// Where inner index k0 starts in A (op(A) is [M,K]: columns of A, or rows of a transposed A) and in B (op(B) is
// [K,N]: rows of B, or columns of a transposed B).
template <typename T> T const* inner_slice_a(T const* A, std::int64_t lda, bool transpose_a, std::int64_t k0) {
    return A + (transpose_a ? k0 * lda : k0);
}
template <typename T> T const* inner_slice_b(T const* B, std::int64_t ldb, bool transpose_b, std::int64_t k0) {
    return B + (transpose_b ? k0 : k0 * ldb);
}

// C = op(A)·op(B) (+ beta·C) the given way: part(k0, k, beta) computes the product over inner indices
// k0 ... k0+k−1 with that beta; chunks after the first add to C.
template <typename Part>
void run_gemm_variant(GemmVariant variant, std::int64_t K, float beta, Part&& part) {
    if (variant == GemmVariant::whole) {
        part(std::int64_t{0}, K, beta);
        return;
    }
    for (std::int64_t k0 = 0; k0 < K; k0 += kInnerChunk) {
        part(k0, K - k0 < kInnerChunk ? K - k0 : kInnerChunk, k0 == 0 ? beta : 1.0f);
    }
}

}  // namespace axonn::cpu
