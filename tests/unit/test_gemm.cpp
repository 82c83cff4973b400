// oneDNN's fp32 GEMM and its bf16 GEMM (bf16 inputs, fp32 accumulation and result) in every transpose
// combination, with row strides wider than the matrices (as attention uses them), against the double-precision
// loop nest. The bf16 reference multiplies the same bf16-rounded inputs, so both GEMMs differ from it by their
// fp32 accumulation alone. Tolerance: 1e-6 relative, norm-wise (fp32 with K ≤ 33).
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/gemm.h"

#include "axonn/core/rng.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
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

class Gemm : public ::testing::TestWithParam<GemmCase> {};
// gemm_bf16 computes C = A·B or C += A·B (alpha 1, beta 0 or 1): the only products the model asks of it.
class GemmBf16 : public ::testing::TestWithParam<GemmCase> {};

TEST_P(Gemm, OneDnnMatchesDoubleReference) {
    auto const [ta, tb, M, N, K, alpha, beta] = GetParam();
    std::int64_t const lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    std::int64_t const rows_a = ta ? K : M, rows_b = tb ? N : K;
    std::vector<float> A(rows_a * lda), Bm(rows_b * ldb), Cf(M * ldc);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(standard_normal({1, 1}, i));
    for (std::size_t i = 0; i < Bm.size(); ++i) Bm[i] = static_cast<float>(standard_normal({1, 2}, i));
    for (std::size_t i = 0; i < Cf.size(); ++i) Cf[i] = static_cast<float>(standard_normal({1, 3}, i));
    std::vector<double> Ad(A.begin(), A.end()), Bd(Bm.begin(), Bm.end()), Cd(Cf.begin(), Cf.end());

    gemm<float>(ta, tb, M, N, K, alpha, A.data(), lda, Bm.data(), ldb, beta, Cf.data(), ldc);
    gemm<double>(ta, tb, M, N, K, alpha, Ad.data(), lda, Bd.data(), ldb, beta, Cd.data(), ldc);

    double difference = 0.0, reference = 0.0;
    for (std::size_t i = 0; i < Cd.size(); ++i) {
        difference += (Cf[i] - Cd[i]) * (Cf[i] - Cd[i]);
        reference += Cd[i] * Cd[i];
    }
    EXPECT_LT(std::sqrt(difference / reference), 1e-6);
}

TEST_P(GemmBf16, MatchesDoubleReferenceOnTheRoundedInputs) {
    auto const [ta, tb, M, N, K, alpha, beta] = GetParam();
    ASSERT_EQ(alpha, 1.0f);
    if (!bf16_gemm_support().available) GTEST_SKIP() << "no bf16 GEMM here: " << bf16_gemm_support().reason;
    std::int64_t const lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    std::int64_t const rows_a = ta ? K : M, rows_b = tb ? N : K;
    std::vector<bfloat16> A(rows_a * lda), Bm(rows_b * ldb);
    std::vector<float> Cf(M * ldc);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = to_bfloat16(static_cast<float>(standard_normal({2, 1}, i)));
    for (std::size_t i = 0; i < Bm.size(); ++i) Bm[i] = to_bfloat16(static_cast<float>(standard_normal({2, 2}, i)));
    for (std::size_t i = 0; i < Cf.size(); ++i) Cf[i] = static_cast<float>(standard_normal({2, 3}, i));
    std::vector<double> Ad(A.size()), Bd(Bm.size()), Cd(Cf.begin(), Cf.end());
    for (std::size_t i = 0; i < A.size(); ++i) Ad[i] = to_float(A[i]);
    for (std::size_t i = 0; i < Bm.size(); ++i) Bd[i] = to_float(Bm[i]);

    gemm_bf16(ta, tb, M, N, K, A.data(), lda, Bm.data(), ldb, beta, Cf.data(), ldc);
    gemm<double>(ta, tb, M, N, K, 1.0, Ad.data(), lda, Bd.data(), ldb, beta, Cd.data(), ldc);

    double difference = 0.0, reference = 0.0;
    for (std::int64_t m = 0; m < M; ++m) {  // the padding columns of C are not part of the result
        for (std::int64_t n = 0; n < N; ++n) {
            double const d = Cf[m * ldc + n] - Cd[m * ldc + n];
            difference += d * d;
            reference += Cd[m * ldc + n] * Cd[m * ldc + n];
        }
    }
    EXPECT_LT(std::sqrt(difference / reference), 1e-6);
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

INSTANTIATE_TEST_SUITE_P(AllTransposes, Gemm,
                         ::testing::Values(GemmCase{false, false, 7, 9, 33, 1.0f, 0.0f},
                                           GemmCase{false, true, 7, 9, 33, 1.0f, 1.0f},
                                           GemmCase{true, false, 7, 9, 33, 0.5f, 0.0f},
                                           GemmCase{true, true, 7, 9, 33, 2.0f, -1.0f},
                                           GemmCase{false, true, 64, 50, 17, 1.0f, 1.0f},
                                           GemmCase{true, false, 7, 9, 33, 1.0f, 1.0f},  // a weight gradient's
                                           GemmCase{true, true, 7, 9, 33, 1.0f, 0.0f}),
                         gemm_case_name);

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmBf16,
                         ::testing::Values(GemmCase{false, false, 7, 9, 33, 1.0f, 0.0f},
                                           GemmCase{false, true, 7, 9, 33, 1.0f, 1.0f},
                                           GemmCase{true, false, 7, 9, 33, 1.0f, 0.0f},
                                           GemmCase{true, false, 7, 9, 33, 1.0f, 1.0f},
                                           GemmCase{true, true, 7, 9, 33, 1.0f, 0.0f},
                                           GemmCase{true, true, 7, 9, 33, 1.0f, 1.0f},
                                           GemmCase{false, true, 64, 50, 17, 1.0f, 1.0f}),
                         gemm_case_name);

}  // namespace
}  // namespace axonn::cpu
