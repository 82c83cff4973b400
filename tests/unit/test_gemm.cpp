// oneDNN's fp32 GEMM and its bf16 GEMM (bf16 inputs, fp32 accumulation and result) in every transpose
// combination, with row strides wider than the matrices (as attention uses them), against the double-precision
// loop nest. The bf16 reference multiplies the same bf16-rounded inputs, so both GEMMs differ from it by their
// fp32 accumulation alone; the bf16 GEMM runs natively where the CPU has it and emulated everywhere. Tolerance:
// 1e-6 relative, norm-wise (fp32 with K ≤ 300).
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/gemm_tuning.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include "support/relative_difference.h"

#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace axonn::cpu {
namespace {

struct GemmCase {
    bool transpose_a, transpose_b;
    std::int64_t M, N, K;
    float alpha, beta;
};

// "NT_7x9x33_alpha20_betam10": A as is, B transposed, M×N×K, alpha and beta in tenths (readable ctest names).
std::string gemm_case_name(::testing::TestParamInfo<GemmCase> const& info) {
    GemmCase const& c = info.param;
    auto const scalar = [](float v) {
        std::string text = std::to_string(static_cast<int>(v * 10));  // alpha and beta are multiples of 0.1
        for (char& ch : text) ch = ch == '-' ? 'm' : ch;
        return text;
    };
    return std::string(c.transpose_a ? "T" : "N") + (c.transpose_b ? "T" : "N") + "_" + std::to_string(c.M) + "x" +
           std::to_string(c.N) + "x" + std::to_string(c.K) + "_alpha" + scalar(c.alpha) + "_beta" + scalar(c.beta);
}

// A case's fp32 operands, at row strides wider than the matrices, drawn from `seed`'s normal stream, with their
// double copies for the reference; C's padding past N holds `sentinel`.
struct GemmOperands {
    static constexpr float sentinel = 12345.0f;
    std::int64_t lda, ldb, ldc;
    std::vector<float> A, B, C;
    std::vector<double> Ad, Bd, Cd;

    GemmOperands(GemmCase const& c, std::uint64_t seed)
        : lda((c.transpose_a ? c.M : c.K) + 3), ldb((c.transpose_b ? c.K : c.N) + 5), ldc(c.N + 2),
          A((c.transpose_a ? c.K : c.M) * lda), B((c.transpose_b ? c.N : c.K) * ldb), C(c.M * ldc) {
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(standard_normal({seed, 1}, i));
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(standard_normal({seed, 2}, i));
        for (std::size_t i = 0; i < C.size(); ++i) C[i] = static_cast<float>(standard_normal({seed, 3}, i));
        for (std::int64_t i = 0; i < c.M; ++i) {
            std::fill(C.begin() + i * ldc + c.N, C.begin() + (i + 1) * ldc, sentinel);
        }
        Ad.assign(A.begin(), A.end()), Bd.assign(B.begin(), B.end()), Cd.assign(C.begin(), C.end());
    }
    // ‖C − Cd‖ / ‖Cd‖ over the M × N product (the padding left out).
    double relative_error(GemmCase const& c) const {
        double difference = 0.0, reference = 0.0;
        for (std::int64_t i = 0; i < c.M; ++i) {
            for (std::int64_t j = 0; j < c.N; ++j) {
                double const expected = Cd[i * ldc + j], error = C[i * ldc + j] - expected;
                difference += error * error;
                reference += expected * expected;
            }
        }
        return std::sqrt(difference / reference);
    }
    // Whether no element of C's padding was written.
    bool padding_kept(GemmCase const& c) const {
        for (std::int64_t i = 0; i < c.M; ++i) {
            for (std::int64_t j = c.N; j < ldc; ++j) {
                if (C[i * ldc + j] != sentinel) return false;
            }
        }
        return true;
    }
};

class Gemm : public ::testing::TestWithParam<GemmCase> {};
// gemm_bf16 computes C = A·B or C += A·B (alpha 1, beta 0 or 1): the only products the model asks of it.
class GemmBf16 : public ::testing::TestWithParam<GemmCase> {};

// Runs `fp32_product(x)` (a float GEMM of case c on x's operands into x.C) and the double reference into x.Cd;
// expects them within the tolerance and C's padding past N untouched.
template <typename Product>
void expect_matches_double_reference(GemmCase const& c, GemmOperands& x, Product&& fp32_product) {
    fp32_product(x);
    gemm<double>(c.transpose_a, c.transpose_b, c.M, c.N, c.K, c.alpha, x.Ad.data(), x.lda, x.Bd.data(), x.ldb, c.beta,
                 x.Cd.data(), x.ldc);
    EXPECT_LT(x.relative_error(c), 1e-6);
    EXPECT_TRUE(x.padding_kept(c));
}

// gemm<float> as the model calls it, or one way of gemm_tuning.h whatever the tuner would choose.
auto tuned_product(GemmCase const& c) {
    return [c](GemmOperands& x) {
        gemm<float>(c.transpose_a, c.transpose_b, c.M, c.N, c.K, c.alpha, x.A.data(), x.lda, x.B.data(), x.ldb, c.beta,
                    x.C.data(), x.ldc);
    };
}
auto product_by_way(GemmVariant way, GemmCase const& c) {
    return [way, c](GemmOperands& x) {
        gemm_way(way, c.transpose_a, c.transpose_b, c.M, c.N, c.K, c.alpha, x.A.data(), x.lda, x.B.data(), x.ldb,
                 c.beta, x.C.data(), x.ldc);
    };
}

TEST_P(Gemm, OneDnnMatchesDoubleReference) {
    GemmOperands x(GetParam(), 1);
    expect_matches_double_reference(GetParam(), x, tuned_product(GetParam()));
}

// Tuning's padded_b way: B's rows copied at a stride 16 floats past their length, then one call.
TEST_P(Gemm, PaddedCopyOfBMatchesDoubleReference) {
    GemmOperands x(GetParam(), 1);
    expect_matches_double_reference(GetParam(), x, product_by_way(GemmVariant::padded_b, GetParam()));
}

// The activations' products (A not transposed) split their columns over the threads, each thread a block of
// whole 16-column vectors (the last one ragged); three threads make every block boundary ragged somewhere. The
// same tolerance, and C's padding past N keeps its sentinel; padded_b's copy is made by the three threads too.
class GemmOverThreads : public ::testing::TestWithParam<GemmCase> {};

// Runs `test` with three OpenMP threads, then restores the count.
template <typename Test>
void on_three_threads(Test&& test) {
    int const threads = omp_get_max_threads();
    omp_set_num_threads(3);
    test();
    omp_set_num_threads(threads);
}

TEST_P(GemmOverThreads, ColumnBlocksMatchDoubleReference) {
    GemmOperands x(GetParam(), 2);
    on_three_threads([&] { expect_matches_double_reference(GetParam(), x, tuned_product(GetParam())); });
}

TEST_P(GemmOverThreads, ColumnBlocksOfAPaddedCopyMatchDoubleReference) {
    GemmOperands x(GetParam(), 2);
    on_three_threads(
        [&] { expect_matches_double_reference(GetParam(), x, product_by_way(GemmVariant::padded_b, GetParam())); });
}

// A bf16 GEMM's operands: x's A and B rounded to bf16, and x's double operands set to the rounded values so that
// the double reference multiplies what the bf16 GEMM reads.
struct RoundedOperands {
    std::vector<bfloat16> A, B;
    explicit RoundedOperands(GemmOperands& x) : A(rounded(x.A, x.Ad)), B(rounded(x.B, x.Bd)) {}
    static std::vector<bfloat16> rounded(std::vector<float> const& values, std::vector<double>& reference) {
        std::vector<bfloat16> bf16(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            bf16[i] = to_bfloat16(values[i]);
            reference[i] = to_float(bf16[i]);
        }
        return bf16;
    }
};

// A bf16 product's products are exact in fp32 and its sums run in fp32: within fp32 rounding (1e-6 relative) of
// the double product of the rounded inputs, whether native or emulated, and C's padding untouched.
template <typename Product>
void expect_bf16_product_matches_double_reference(GemmCase const& c, Product&& product) {
    ASSERT_EQ(c.alpha, 1.0f);
    GemmOperands x(c, 2);
    RoundedOperands const rounded(x);
    product(c.transpose_a, c.transpose_b, c.M, c.N, c.K, rounded.A.data(), x.lda, rounded.B.data(), x.ldb, c.beta,
            x.C.data(), x.ldc);
    gemm<double>(c.transpose_a, c.transpose_b, c.M, c.N, c.K, 1.0, x.Ad.data(), x.lda, x.Bd.data(), x.ldb, c.beta,
                 x.Cd.data(), x.ldc);
    EXPECT_LT(x.relative_error(c), 1e-6);
    EXPECT_TRUE(x.padding_kept(c));
}

TEST_P(GemmBf16, MatchesDoubleReferenceOnTheRoundedInputs) {
    expect_bf16_product_matches_double_reference(GetParam(), gemm_bf16);
}

// Each way gemm_bf16's tuning may choose, whatever it would choose: the same tolerance and the padding untouched
// (on a CPU with AMX, the halves run on oneDNN's AVX-512 kernel where the whole product runs on AMX).
TEST_P(GemmBf16, EachWayMatchesDoubleReferenceOnTheRoundedInputs) {
    for (GemmVariant const way : {GemmVariant::whole, GemmVariant::column_halves}) {
        SCOPED_TRACE(gemm_variant_name(way));
        GemmCase const c = GetParam();
        expect_bf16_product_matches_double_reference(
            c, [way](bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, bfloat16 const* A,
                     std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
                gemm_bf16_way(way, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
            });
    }
}

TEST_P(GemmBf16, EmulatedMatchesDoubleReferenceOnTheRoundedInputs) {
    expect_bf16_product_matches_double_reference(GetParam(), gemm_bf16_emulated);
}

// gemm_bf16 is oneDNN's native kernel where the CPU has one, and then agrees with the emulation up to the order of
// fp32 sums (1e-6 relative); elsewhere it is the emulation, bitwise.
TEST_P(GemmBf16, NativeAgreesWithEmulated) {
    GemmCase const c = GetParam();
    GemmOperands x(c, 2), emulated(c, 2);
    RoundedOperands const rounded(x);
    gemm_bf16(c.transpose_a, c.transpose_b, c.M, c.N, c.K, rounded.A.data(), x.lda, rounded.B.data(), x.ldb, c.beta,
              x.C.data(), x.ldc);
    gemm_bf16_emulated(c.transpose_a, c.transpose_b, c.M, c.N, c.K, rounded.A.data(), x.lda, rounded.B.data(), x.ldb,
                       c.beta, emulated.C.data(), x.ldc);
    if (bf16_gemm_support().native) {
        for (std::size_t i = 0; i < x.C.size(); ++i) x.Cd[i] = emulated.C[i];
        EXPECT_LT(x.relative_error(c), 1e-6) << bf16_gemm_support().reason;
    } else {
        EXPECT_EQ(x.C, emulated.C) << "without a native bf16 GEMM (" << bf16_gemm_support().reason
                                   << "), gemm_bf16 must be the emulation";
    }
}

// Rounding to bf16: to nearest, ties to even; infinities stay; a NaN stays a NaN (never rounds into infinity).
TEST(Bfloat16, RoundsToNearestEven) {
    struct Case {
        float value;
        std::uint16_t bits;
    };
    Case const cases[] = {
        {1.0f, 0x3F80},
        {-2.5f, 0xC020},
        {std::bit_cast<float>(0x3F808000u), 0x3F80},  // halfway, even below: down
        {std::bit_cast<float>(0x3F818000u), 0x3F82},  // halfway, odd below: up
        {std::bit_cast<float>(0x3F808001u), 0x3F81},  // just above halfway: up
        {std::bit_cast<float>(0x7F7FFFFFu), 0x7F80},  // the largest float rounds to infinity
        {std::numeric_limits<float>::infinity(), 0x7F80},
        {std::bit_cast<float>(0x00000001u), 0x0000},  // the smallest denormal rounds to zero
    };
    for (Case const& c : cases) {
        EXPECT_EQ(to_bfloat16(c.value).bits, c.bits) << std::hex << std::bit_cast<std::uint32_t>(c.value);
    }
    EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::bit_cast<float>(0x7FFFFFFFu)))));
    EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::bit_cast<float>(0x7F800001u)))));  // would round to inf
    EXPECT_EQ(to_float(to_bfloat16(3.140625f)), 3.140625f);  // exactly representable: unchanged
}

// A double product C = op(A)·op(B) + C for the ways' tests: A [M,K] (or [K,M]), B [K,N] (or [N,K]) and C drawn
// from `seed`'s normal stream, row strides those of dense matrices.
struct DoubleProduct {
    bool ta, tb;
    std::int64_t M, N, K, lda, ldb;
    std::vector<double> A, B, C;
    DoubleProduct(bool ta_, bool tb_, std::int64_t M_, std::int64_t N_, std::int64_t K_, std::uint64_t seed)
        : ta(ta_), tb(tb_), M(M_), N(N_), K(K_), lda(ta ? M : K), ldb(tb ? K : N), A(M * K), B(K * N), C(M * N) {
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = standard_normal({seed, 1}, i);
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = standard_normal({seed, 2}, i);
        for (std::size_t i = 0; i < C.size(); ++i) C[i] = standard_normal({seed, 3}, i);
    }
    // C + alpha · op(A)·op(B), the whole product in one call.
    std::vector<double> whole(double alpha) const {
        std::vector<double> out = C;
        gemm<double>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, 1.0, out.data(), N);
        return out;
    }
};

// GEMM tuning's second way, the inner dimension in chunks summed into C, in every transpose: the same product as
// the whole GEMM, in double (tolerance 1e-12: only the order of the sums differs). K spans two chunks and a ragged
// third, and beta 1 checks that only the first chunk applies beta.
TEST(GemmTuning, InnerChunksComputeTheWholeProduct) {
    for (bool const ta : {false, true}) {
        for (bool const tb : {false, true}) {
            DoubleProduct const p(ta, tb, 3, 4, 2 * kInnerChunk + 77, 3);
            std::vector<double> chunked = p.C;
            run_gemm_variant(GemmVariant::inner_chunks, p.N, p.K, 1.0f,
                             [&](std::int64_t k0, std::int64_t k, std::int64_t j0, std::int64_t j1, float beta) {
                                 ASSERT_EQ(j0, 0);
                                 ASSERT_EQ(j1, p.N);
                                 gemm<double>(ta, tb, p.M, p.N, k, 0.5, inner_slice_a(p.A.data(), p.lda, ta, k0), p.lda,
                                              inner_slice_b(p.B.data(), p.ldb, tb, k0), p.ldb, beta, chunked.data(),
                                              p.N);
                             });
            EXPECT_LT(testing::relative_difference(chunked, p.whole(0.5)), 1e-12)
                << "transpose_a " << ta << ", transpose_b " << tb;
        }
    }
}

// GEMM tuning's column_halves way: C's columns cut once, the first part whole vectors of 16 where N allows, each
// part one product over the whole inner dimension; in double the halves are the whole product bitwise (each entry
// is the same sum), beta applied to both halves.
TEST(GemmTuning, ColumnHalvesCoverEveryColumnOnce) {
    struct Case {
        std::int64_t N, half;
    };
    for (Case const c : {Case{768, 384}, Case{2304, 1152}, Case{50, 32}, Case{40, 32}, Case{9, 8}, Case{2, 1}}) {
        EXPECT_EQ(half_of_columns(c.N), c.half) << "N = " << c.N;
    }
    for (std::int64_t const N : {std::int64_t{1}, std::int64_t{9}, std::int64_t{70}}) {
        for (bool const ta : {false, true}) {
            for (bool const tb : {false, true}) {
                DoubleProduct const p(ta, tb, 5, N, 37, 4);
                std::vector<double> halves = p.C;
                int parts = 0;
                run_gemm_variant(GemmVariant::column_halves, N, p.K, 1.0f,
                                 [&](std::int64_t k0, std::int64_t k, std::int64_t j0, std::int64_t j1, float beta) {
                                     ASSERT_EQ(k0, 0);
                                     ASSERT_EQ(k, p.K);
                                     ASSERT_LT(j0, j1);
                                     ++parts;
                                     gemm<double>(ta, tb, p.M, j1 - j0, p.K, 1.0, p.A.data(), p.lda,
                                                  column_slice_b(p.B.data(), p.ldb, tb, j0), p.ldb, beta,
                                                  halves.data() + j0, N);
                                 });
                EXPECT_EQ(parts, N >= 2 ? 2 : 1) << "N = " << N;
                EXPECT_EQ(halves, p.whole(1.0)) << "N = " << N << ", transpose_a " << ta << ", transpose_b " << tb;
            }
        }
    }
}

bool was_tuned(GemmShape const& shape) {
    std::vector<GemmTuning> const tunings = gemm_tunings();
    return std::any_of(tunings.begin(), tunings.end(), [&](GemmTuning const& t) { return t.shape == shape; });
}

// The norm-wise relative errors against double of two calls of gemm<float>(A as is, B transposed or not) with
// tuning on, on random operands from `seed`: the first call times the shape's ways where it has several, the
// second runs the chosen one.
std::array<double, 2> errors_of_two_tuned_calls(bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
                                                std::uint64_t seed) {
    std::int64_t const ldb = transpose_b ? K : N;
    std::vector<float> A(M * K), Bm(K * N), C(M * N);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(standard_normal({seed, 1}, i));
    for (std::size_t i = 0; i < Bm.size(); ++i) Bm[i] = static_cast<float>(standard_normal({seed, 2}, i));
    std::vector<double> Ad(A.begin(), A.end()), Bd(Bm.begin(), Bm.end()), Cd(M * N);
    gemm<double>(false, transpose_b, M, N, K, 1.0, Ad.data(), K, Bd.data(), ldb, 0.0, Cd.data(), N);
    set_gemm_tuning(true);
    std::array<double, 2> errors{};
    for (double& error : errors) {
        gemm<float>(false, transpose_b, M, N, K, 1.0f, A.data(), K, Bm.data(), ldb, 0.0f, C.data(), N);
        double difference = 0, reference = 0;
        for (std::size_t i = 0; i < C.size(); ++i) {
            difference += (C[i] - Cd[i]) * (C[i] - Cd[i]);
            reference += Cd[i] * Cd[i];
        }
        error = std::sqrt(difference / reference);
    }
    return errors;
}

// A GEMM long enough to tune is timed once and gives the product whichever way won (fp32 against double:
// 1e-5 norm-wise, for K = 16,387 random terms per entry); with tuning off, a new shape is never timed.
TEST(GemmTuning, ALongGemmIsTunedOnceAndStaysCorrect) {
    std::int64_t const M = 5, N = 6, K = 2 * kInnerChunk + 3;
    std::size_t const before = gemm_tunings().size();
    for (double const error : errors_of_two_tuned_calls(true, M, N, K, 4)) EXPECT_LT(error, 1e-5);
    EXPECT_TRUE(was_tuned({false, false, true, M, N, K}));
    EXPECT_EQ(gemm_tunings().size(), before + 1) << "timed more than once";

    set_gemm_tuning(false);
    std::vector<float> const A((M - 1) * K, 1.0f), Bm(N * K, 1.0f);
    std::vector<float> C((M - 1) * N);
    gemm<float>(false, true, M - 1, N, K, 1.0f, A.data(), K, Bm.data(), K, 0.0f, C.data(), N);
    EXPECT_FALSE(was_tuned({false, false, true, M - 1, N, K}));
    set_gemm_tuning(true);
}

// Which ways are timed: the whole product always; chunks where K spans two chunks; B's padded copy for fp32
// products with A not transposed, of at least kTimedMinWork multiply-adds, whose copy fits in kPaddedMaxBytes;
// C's columns in halves for bf16 products of at least kTimedMinWork multiply-adds and 32 columns.
TEST(GemmTuning, CandidatesFollowTheShape) {
    using enum GemmVariant;
    struct Case {
        GemmShape shape;
        std::vector<GemmVariant> ways;
    };
    Case const cases[] = {
        {{false, false, false, 7, 9, 33}, {whole}},                      // too small to be worth a copy
        {{false, false, false, 256, 3072, 768}, {whole, padded_b}},      // GPT-2 small's MLP projection's dX
        {{true, false, false, 256, 3072, 768}, {whole, column_halves}},  // bf16: halves, no padded copy
        {{true, true, false, 3072, 768, 2048}, {whole, column_halves}},   // a bf16 weight gradient
        {{true, false, false, 2048, 16, 4096}, {whole}},                 // bf16, too narrow to halve
        {{true, false, false, 64, 1024, 1023}, {whole}},                 // bf16, one column short of the work
        {{true, false, false, 1024, 768, 50304}, {whole, inner_chunks, column_halves}},  // the bf16 LM head's dX
        {{false, true, false, 768, 3072, 256}, {whole}},                 // a weight gradient (A transposed)
        {{false, false, true, 64, 1024, 1024}, {whole, padded_b}},       // exactly kTimedMinWork
        {{false, false, true, 64, 1024, 1023}, {whole}},                 // one column short of it
        {{false, false, false, 256, 768, 50304}, {whole, inner_chunks}}, // the LM head's dX: a 158 MB copy
        {{false, false, true, 5, 6, 2 * kInnerChunk + 3}, {whole, inner_chunks}},
        {{false, false, true, 256, 2048, 2 * kInnerChunk}, {whole, inner_chunks}},  // a copy of 128 MiB
        {{false, false, false, 256, 1008, 2 * kInnerChunk}, {whole, inner_chunks, padded_b}},  // a copy of 64 MiB
    };
    for (Case const& c : cases) {
        EXPECT_EQ(gemm_candidates(c.shape), c.ways) << c.shape.M << "x" << c.shape.N << "x" << c.shape.K;
    }
}

// A product big enough for the padded copy is timed once (whole and padded, no chunks) and gives the right product
// whichever way won: against double, 1e-6 norm-wise for K = 1,024 random terms per entry (measured: 2.9e-7).
TEST(GemmTuning, ABigProductIsTimedWithAPaddedCopyAndStaysCorrect) {
    std::int64_t const M = 64, N = 1024, K = 1024;
    for (double const error : errors_of_two_tuned_calls(false, M, N, K, 5)) EXPECT_LT(error, 1e-6);
    std::vector<GemmTuning> const tunings = gemm_tunings();
    auto const tuned = std::find_if(tunings.begin(), tunings.end(), [&](GemmTuning const& t) {
        return t.shape == GemmShape{false, false, false, M, N, K};
    });
    ASSERT_NE(tuned, tunings.end());
    EXPECT_GT(tuned->whole_s, 0);
    EXPECT_GT(tuned->padded_s, 0);
    EXPECT_EQ(tuned->chunks_s, 0) << "K is one chunk: chunks are not a candidate";
    auto const same_shape = [&](GemmTuning const& t) { return t.shape == tuned->shape; };
    EXPECT_EQ(std::count_if(tunings.begin(), tunings.end(), same_shape), 1)
        << "timed more than once";
}

// The tuning of a product that adds to C (beta 1) times its ways into a scratch, never into C, even a dense C (the
// case where a product that overwrites C is timed into C itself): the first call, which tunes, still gives
// C + op(A)·B, in fp32 and in bf16 (each shape new to the process, with more than one candidate; against double,
// 1e-6 norm-wise as above, on the bf16-rounded inputs for bf16).
TEST(GemmTuning, TuningAProductThatAddsToCLeavesCsSumIntact) {
    for (bool const bf16 : {false, true}) {
        bool const ta = bf16;  // a weight gradient's product in bf16
        std::int64_t const M = bf16 ? 272 : 64, N = bf16 ? 512 : 1040, K = bf16 ? 512 : 1024, lda = ta ? M : K;
        ASSERT_GT(gemm_candidates({bf16, ta, false, M, N, K}).size(), 1u);
        std::vector<float> A(M * K), Bm(K * N), C(M * N);
        std::vector<bfloat16> A16(A.size()), B16(Bm.size());
        for (std::size_t i = 0; i < A.size(); ++i) {
            A16[i] = to_bfloat16(A[i] = static_cast<float>(standard_normal({8, 1}, i)));
        }
        for (std::size_t i = 0; i < Bm.size(); ++i) {
            B16[i] = to_bfloat16(Bm[i] = static_cast<float>(standard_normal({8, 2}, i)));
        }
        for (std::size_t i = 0; i < C.size(); ++i) C[i] = static_cast<float>(standard_normal({8, 3}, i));
        std::vector<double> Ad(A.size()), Bd(Bm.size()), Cd(C.begin(), C.end());
        for (std::size_t i = 0; i < A.size(); ++i) Ad[i] = bf16 ? to_float(A16[i]) : A[i];
        for (std::size_t i = 0; i < Bm.size(); ++i) Bd[i] = bf16 ? to_float(B16[i]) : Bm[i];
        gemm<double>(ta, false, M, N, K, 1.0, Ad.data(), lda, Bd.data(), N, 1.0, Cd.data(), N);
        set_gemm_tuning(true);
        std::size_t const before = gemm_tunings().size();
        if (bf16) {
            gemm_bf16(ta, false, M, N, K, A16.data(), lda, B16.data(), N, 1.0f, C.data(), N);
        } else {
            gemm<float>(ta, false, M, N, K, 1.0f, A.data(), lda, Bm.data(), N, 1.0f, C.data(), N);
        }
        // Without a native bf16 GEMM, gemm_bf16 is the emulation, whose fp32 product here has one candidate.
        std::size_t const tuned = !bf16 || bf16_gemm_support().native ? 1 : 0;
        EXPECT_EQ(gemm_tunings().size(), before + tuned) << (bf16 ? "bf16" : "fp32");
        std::vector<double> const got(C.begin(), C.end());
        EXPECT_LT(testing::relative_difference(got, Cd), 1e-6) << (bf16 ? "bf16" : "fp32");
    }
}

// On AVX2 oneDNN chooses its sgemm kernel without looking at the strides, so the padded copy of B changes where B's
// rows lie and nothing else: the product is bitwise the whole one (docs/PERFORMANCE.md relies on it). Checked at
// GPT-2 small's MLP projection input gradient, the shape that picks the copy, and with B transposed. On AVX-512
// oneDNN picks its kernel by stride, and the two agree only to fp32 rounding (1e-6 norm-wise for K = 768 terms).
TEST(GemmTuning, ThePaddedCopyGivesTheWholeProductBitwiseOnAvx2) {
    bool const avx512 = __builtin_cpu_supports("avx512f");
    std::int64_t const M = 256, N = 3072, K = 768;
    std::vector<float> A(M * K), Bm(K * N), whole(M * N), padded(M * N);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(standard_normal({6, 1}, i));
    for (std::size_t i = 0; i < Bm.size(); ++i) Bm[i] = static_cast<float>(standard_normal({6, 2}, i));
    for (bool const tb : {false, true}) {
        std::int64_t const ldb = tb ? K : N;
        gemm_way(GemmVariant::whole, false, tb, M, N, K, 1.0f, A.data(), K, Bm.data(), ldb, 0.0f, whole.data(), N);
        gemm_way(GemmVariant::padded_b, false, tb, M, N, K, 1.0f, A.data(), K, Bm.data(), ldb, 0.0f, padded.data(), N);
        if (avx512) {
            EXPECT_LT(testing::relative_difference(whole, padded), 1e-6) << "transpose_b " << tb;
        } else {
            EXPECT_EQ(whole, padded) << "transpose_b " << tb;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, Gemm,
                         ::testing::Values(GemmCase{false, false, 7, 9, 33, 1.0f, 0.0f},
                                           GemmCase{false, true, 7, 9, 33, 1.0f, 1.0f},
                                           GemmCase{true, false, 7, 9, 33, 0.5f, 0.0f},
                                           GemmCase{true, true, 7, 9, 33, 2.0f, -1.0f},
                                           GemmCase{false, true, 64, 50, 17, 1.0f, 1.0f},
                                           GemmCase{true, false, 7, 9, 33, 1.0f, 1.0f},  // a weight gradient's
                                           GemmCase{true, true, 7, 9, 33, 1.0f, 0.0f}),
                         gemm_case_name);

INSTANTIATE_TEST_SUITE_P(Columns, GemmOverThreads,
                         ::testing::Values(GemmCase{false, false, 5, 400, 33, 1.0f, 0.0f},
                                           GemmCase{false, true, 5, 400, 33, 1.0f, 1.0f},
                                           GemmCase{false, true, 9, 1000, 17, 0.5f, -1.0f},
                                           GemmCase{false, false, 3, 385, 65, 2.0f, 1.0f},
                                           GemmCase{true, false, 5, 400, 33, 1.0f, 1.0f}),  // oneDNN's threads
                         gemm_case_name);

INSTANTIATE_TEST_SUITE_P(
    AllTransposes, GemmBf16,
    ::testing::Values(GemmCase{false, false, 7, 9, 33, 1.0f, 0.0f}, GemmCase{false, true, 7, 9, 33, 1.0f, 1.0f},
                      GemmCase{true, false, 7, 9, 33, 1.0f, 0.0f}, GemmCase{true, false, 7, 9, 33, 1.0f, 1.0f},
                      GemmCase{true, true, 7, 9, 33, 1.0f, 0.0f}, GemmCase{true, true, 7, 9, 33, 1.0f, 1.0f},
                      GemmCase{false, true, 64, 50, 17, 1.0f, 1.0f}, GemmCase{false, false, 33, 70, 300, 1.0f, 0.0f},
                      GemmCase{true, false, 48, 96, 64, 1.0f, 1.0f}, GemmCase{false, true, 40, 80, 128, 1.0f, 0.0f}),
    gemm_case_name);

// oneDNN reports a packing or scratch buffer it cannot allocate as a status (dnnl_out_of_memory), which was checked
// as a broken invariant: a run short of memory ended with "internal error", exit 70, instead of out of memory, exit 1.
TEST(OneDnnStatus, OutOfMemoryIsBadAllocAndAnyOtherFailureABug) {
    EXPECT_NO_THROW(require_onednn_success(dnnl_success, "sgemm", 2, 3, 4));
    EXPECT_THROW(require_onednn_success(dnnl_out_of_memory, "sgemm", 2, 3, 4), std::bad_alloc);
    try {
        require_onednn_success(dnnl_runtime_error, "bf16 matmul", 2, 3, 4);
        ADD_FAILURE() << "a runtime error passed";
    } catch (InternalError const& error) {
        EXPECT_STREQ(error.what(), "oneDNN bf16 matmul failed (status 5) for M=2 N=3 K=4");
    }
}

}  // namespace
}  // namespace axonn::cpu
