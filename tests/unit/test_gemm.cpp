// oneDNN's fp32 GEMM in every transpose combination, with row strides wider than the matrices (as attention
// uses them), against the double-precision loop nest. Tolerance: 1e-6 relative, norm-wise (fp32 with K ≤ 33).
#include "axonn/kernels/cpu/gemm.h"

#include "axonn/core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace axonn::cpu {
namespace {

struct GemmCase {
    bool transpose_a, transpose_b;
    std::int64_t M, N, K;
    float alpha, beta;
};

class Gemm : public ::testing::TestWithParam<GemmCase> {};

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

INSTANTIATE_TEST_SUITE_P(AllTransposes, Gemm,
                         ::testing::Values(GemmCase{false, false, 7, 9, 33, 1.0f, 0.0f},
                                           GemmCase{false, true, 7, 9, 33, 1.0f, 1.0f},
                                           GemmCase{true, false, 7, 9, 33, 0.5f, 0.0f},
                                           GemmCase{true, true, 7, 9, 33, 2.0f, -1.0f},
                                           GemmCase{false, true, 64, 50, 17, 1.0f, 1.0f}));

}  // namespace
}  // namespace axonn::cpu
