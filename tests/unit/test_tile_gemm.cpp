// The tile GEMM of fused attention and the transpose that packs its operands, against plain loops in double.
// The cases cross every edge of the AVX-512 kernel (1-4 vectors of 16 columns in a panel) and of the AVX2 kernel
// (1-2 vectors of 8): 1-6 rows and ragged blocks of rows past 6, masked tails and whole vectors (1, 8, 15, 16, 17,
// 24, 33, 63, 64, 65 and 130 columns), K of 0, 1 and 64, A as is and transposed, beta 0 and 1, and strides wider
// than the matrices. fp32 against the double product of the same fp32 inputs:
// within 1e-6 relative, norm-wise (K ≤ 64 terms, each rounded once); double within 1e-14. Entries outside C's
// N columns must keep their sentinel, and beta = 0 must not read C (a NaN there must not leak through).
#include "axonn/kernels/cpu/tile_gemm.h"

#include "axonn/core/rng.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace axonn::cpu {
namespace {

struct TileGemmCase {
    int M, N, K;
    bool transpose_a;
    float beta;
};

std::string tile_case_name(::testing::TestParamInfo<TileGemmCase> const& info) {
    TileGemmCase const& c = info.param;
    return std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) +
           (c.transpose_a ? "_At" : "_A") +
           (c.beta == 0.0f ? "_beta0" : "_beta1");
}

constexpr float sentinel = 1234.5f;

// The inputs of one case, with row strides 3 (A), 5 (B) and 2 (C) elements wider than the matrices.
struct Operands {
    std::int64_t lda, ldb, ldc, a_row, a_col;
    std::vector<float> A, B, C;

    explicit Operands(TileGemmCase const& c) {
        int const a_rows = c.transpose_a ? c.K : c.M, a_cols = c.transpose_a ? c.M : c.K;
        lda = a_cols + 3, ldb = c.N + 5, ldc = c.N + 2;
        a_row = c.transpose_a ? 1 : lda, a_col = c.transpose_a ? lda : 1;
        A.resize(static_cast<std::size_t>(std::max(a_rows, 1)) * lda);
        B.resize(static_cast<std::size_t>(std::max(c.K, 1)) * ldb);
        C.assign(static_cast<std::size_t>(c.M) * ldc, sentinel);
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(standard_normal({3, 1}, i));
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(standard_normal({3, 2}, i));
        for (int i = 0; i < c.M; ++i) {
            for (int j = 0; j < c.N; ++j) {
                C[i * ldc + j] = c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                                : static_cast<float>(standard_normal({3, 3}, i * ldc + j));
            }
        }
    }

    // beta·C + A·B in double, from the same fp32 inputs: [M,N], densely
    std::vector<double> expected(TileGemmCase const& c) const {
        std::vector<double> result;
        for (int i = 0; i < c.M; ++i) {
            for (int j = 0; j < c.N; ++j) {
                double sum = c.beta == 0.0f ? 0.0 : c.beta * static_cast<double>(C[i * ldc + j]);
                for (int k = 0; k < c.K; ++k) sum += double{A[i * a_row + k * a_col]} * double{B[k * ldb + j]};
                result.push_back(sum);
            }
        }
        return result;
    }
};

// The [M,N] entries of a C with row stride ldc, densely, in double
template <typename T> std::vector<double> entries(std::vector<T> const& C, int M, int N, std::int64_t ldc) {
    std::vector<double> result;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) result.push_back(static_cast<double>(C[i * ldc + j]));
    return result;
}

class TileGemm : public ::testing::TestWithParam<TileGemmCase> {};

TEST_P(TileGemm, MatchesTheDoubleProduct) {
    TileGemmCase const& c = GetParam();
    Operands const inputs(c);
    std::vector<double> const expected = inputs.expected(c);

    std::vector<float> C = inputs.C;
    tile_gemm<float>(c.M, c.N, c.K, inputs.A.data(), inputs.a_row, inputs.a_col, inputs.B.data(), inputs.ldb, c.beta,
                     C.data(), inputs.ldc);
    EXPECT_LT(testing::relative_difference(entries(C, c.M, c.N, inputs.ldc), expected), 1e-6);

    std::vector<double> const Ad(inputs.A.begin(), inputs.A.end()), Bd(inputs.B.begin(), inputs.B.end());
    std::vector<double> Cd(inputs.C.begin(), inputs.C.end());
    tile_gemm<double>(c.M, c.N, c.K, Ad.data(), inputs.a_row, inputs.a_col, Bd.data(), inputs.ldb, c.beta, Cd.data(),
                      inputs.ldc);
    EXPECT_LT(testing::relative_difference(entries(Cd, c.M, c.N, inputs.ldc), expected), 1e-14);

    for (int i = 0; i < c.M; ++i) {  // the padding of each row of C is never written
        for (std::int64_t j = c.N; j < inputs.ldc; ++j) {
            EXPECT_EQ(C[i * inputs.ldc + j], sentinel) << i << "," << j;
            EXPECT_EQ(Cd[i * inputs.ldc + j], sentinel) << i << "," << j;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TileGemm,
    ::testing::Values(TileGemmCase{1, 1, 1, false, 0.0f},     // one entry
                      TileGemmCase{6, 64, 64, false, 0.0f},   // one whole block
                      TileGemmCase{6, 64, 64, true, 1.0f},    // the same from Aᵀ, accumulating
                      TileGemmCase{5, 15, 64, false, 1.0f},   // one vector, masked
                      TileGemmCase{4, 16, 1, true, 0.0f},     // one whole vector, K = 1
                      TileGemmCase{5, 8, 64, true, 0.0f},     // one whole AVX2 vector
                      TileGemmCase{6, 24, 64, false, 1.0f},   // an AVX2 panel and one whole vector
                      TileGemmCase{3, 17, 64, false, 0.0f},   // two vectors, the second of one column
                      TileGemmCase{2, 33, 7, true, 1.0f},     // three vectors
                      TileGemmCase{13, 63, 64, false, 1.0f},  // blocks of 6, 6 and 1 rows
                      TileGemmCase{7, 65, 64, true, 0.0f},    // a second panel of one column
                      TileGemmCase{64, 130, 64, false, 0.0f}, // an attention tile: 64 queries × 128 + 2 keys
                      TileGemmCase{128, 64, 64, true, 1.0f},  // dV += Pᵀ·dO of a 64 × 128 tile
                      TileGemmCase{9, 40, 0, false, 1.0f},    // K = 0: C = beta·C
                      TileGemmCase{9, 40, 0, true, 0.0f}),    // K = 0, beta = 0: C = 0
    tile_case_name);

// The transpose is exact; entries of the output beyond the block keep their sentinel.
TEST(TileTranspose, MovesEveryEntryAndNothingElse) {
    for (int const rows : {1, 15, 16, 17, 40}) {
        for (int const cols : {1, 3, 16, 33}) {
            std::int64_t const ld_in = cols + 7, ld_out = rows + 16;
            std::vector<float> in(static_cast<std::size_t>(rows) * ld_in), out(static_cast<std::size_t>(cols) * ld_out,
                                                                             sentinel);
            for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
            std::vector<double> in_d(in.begin(), in.end()), out_d(out.begin(), out.end());
            transpose<float>(out.data(), ld_out, in.data(), ld_in, rows, cols);
            transpose<double>(out_d.data(), ld_out, in_d.data(), ld_in, rows, cols);
            for (int c = 0; c < cols; ++c) {
                for (std::int64_t r = 0; r < ld_out; ++r) {
                    float const expected = r < rows ? in[r * ld_in + c] : sentinel;
                    EXPECT_EQ(out[c * ld_out + r], expected) << rows << "x" << cols << " at " << c << "," << r;
                    EXPECT_EQ(out_d[c * ld_out + r], expected) << rows << "x" << cols << " at " << c << "," << r;
                }
            }
        }
    }
}

}  // namespace
}  // namespace axonn::cpu
