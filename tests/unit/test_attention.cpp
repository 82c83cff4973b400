// The fused, tiled attention against the plain one (tests/support/reference_attention.h), which stores every head's
// [T,T] probabilities: sequences shorter than a tile, one longer, many tiles with a ragged last one, in the default
// tiles and in small ones, and grouped-query attention (fewer key/value heads than query heads, whose gradients gather
// those of every query head of the group). In double the two differ only in rounding (tolerance 1e-12, norm-wise); the
// fp32 kernels against the double reference on the same rounded inputs within 1e-5 (measured: out up to 3e-7, dqkv up
// to 7e-7), which also covers the fp32 exp approximation. The bf16 kernels (every tile GEMM on bf16 inputs: q, k, v,
// dout and each tile of P and dS rounded to bf16, 2⁻⁹ relative each) against the same reference: out within 1e-2, dqkv
// within 2e-2, as the model's bf16 gradients (the softmax backward's dP − D cancels, which magnifies the rounding;
// measured up to 8.8e-3 with these peaked rows), and further than 1e-5, or they did not round at all. The
// backward writes dqkv: it starts as NaN here, so a gradient added to it, or an element never written, shows.
#include "axonn/kernels/cpu/attention.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu_backend.h"

#include "axonn/core/rng.h"
#include "support/reference_attention.h"
#include "support/relative_difference.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace axonn::cpu {
namespace {

struct AttentionCase {
    int B, T, C, NH, NKV;
    AttentionTiles tiles;
};

std::string case_name(::testing::TestParamInfo<AttentionCase> const& info) {
    AttentionCase const& c = info.param;
    return fmt::format("B{}_T{}_C{}_NH{}_NKV{}_tiles{}x{}", c.B, c.T, c.C, c.NH, c.NKV, c.tiles.queries,
                       c.tiles.keys);
}

// The fused forward and backward in element type T on the given inputs, returned in double: out, then dqkv.
template <typename T>
std::pair<std::vector<double>, std::vector<double>> fused(AttentionCase const& c, std::vector<double> const& qkv,
                                                          std::vector<double> const& dout) {
    std::vector<T> const qkv_t(qkv.begin(), qkv.end()), dout_t(dout.begin(), dout.end());
    std::vector<T> out(dout.size()), lse(static_cast<std::size_t>(c.B) * c.NH * c.T);
    std::vector<T> dqkv(qkv.size(), std::numeric_limits<T>::quiet_NaN());
    attention_forward<T>(out.data(), lse.data(), qkv_t.data(), c.B, c.T, c.C, c.NH, c.NKV, c.tiles);
    attention_backward<T>(dqkv.data(), dout_t.data(), qkv_t.data(), out.data(), lse.data(), c.B, c.T, c.C, c.NH, c.NKV,
                          c.tiles);
    return {std::vector<double>(out.begin(), out.end()), std::vector<double>(dqkv.begin(), dqkv.end())};
}

// The bf16 kernels on the same inputs: out, then dqkv.
std::pair<std::vector<double>, std::vector<double>> fused_bf16(AttentionCase const& c, std::vector<double> const& qkv,
                                                               std::vector<double> const& dout) {
    std::vector<float> const qkv_f(qkv.begin(), qkv.end()), dout_f(dout.begin(), dout.end());
    std::vector<bfloat16> qkv_b(qkv.size()), dout_b(dout.size());
    to_bf16(qkv_b.data(), qkv_f.data(), static_cast<std::int64_t>(qkv_b.size()));
    to_bf16(dout_b.data(), dout_f.data(), static_cast<std::int64_t>(dout_b.size()));
    std::vector<float> out(dout.size()), lse(static_cast<std::size_t>(c.B) * c.NH * c.T);
    std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN());
    attention_forward_bf16(out.data(), lse.data(), qkv_b.data(), c.B, c.T, c.C, c.NH, c.NKV, c.tiles);
    attention_backward_bf16(dqkv.data(), dout_b.data(), qkv_b.data(), out.data(), lse.data(), c.B, c.T, c.C, c.NH,
                            c.NKV, c.tiles);
    return {std::vector<double>(out.begin(), out.end()), std::vector<double>(dqkv.begin(), dqkv.end())};
}

// n normals of standard deviation `scale` from stream `stream`, rounded to fp32 so that the fp32 kernels and the
// double reference see the same numbers
std::vector<double> normal_values(std::size_t n, std::uint64_t stream, double scale = 1.0) {
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(scale * standard_normal({7, stream}, i));
    return values;
}

class FusedAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(FusedAttention, MatchesFullAttention) {
    AttentionCase const& c = GetParam();
    std::size_t const tokens = static_cast<std::size_t>(c.B) * c.T;
    // Scale 2 gives peaked softmax rows, where the online maximum matters.
    std::vector<double> const qkv = normal_values(tokens * (c.C + 2 * c.NKV * (c.C / c.NH)), 1, 2.0),
                              dout = normal_values(tokens * c.C, 2);

    testing::ReferenceAttention reference{c.B, c.T, c.C, c.NH, c.NKV, {}};
    std::vector<double> out(dout.size()), dqkv(qkv.size(), 0.0);
    reference.forward(out.data(), qkv.data());
    reference.backward(dqkv.data(), dout.data(), qkv.data());

    auto const [out_double, dqkv_double] = fused<double>(c, qkv, dout);
    EXPECT_LT(testing::relative_difference(out_double, out), 1e-12);
    EXPECT_LT(testing::relative_difference(dqkv_double, dqkv), 1e-12);
    auto const [out_float, dqkv_float] = fused<float>(c, qkv, dout);
    EXPECT_LT(testing::relative_difference(out_float, out), 1e-5);
    EXPECT_LT(testing::relative_difference(dqkv_float, dqkv), 1e-5);

    auto const [out_bf16, dqkv_bf16] = fused_bf16(c, qkv, dout);
    double const out_error = testing::relative_difference(out_bf16, out);
    double const dqkv_error = testing::relative_difference(dqkv_bf16, dqkv);
    EXPECT_LT(out_error, 1e-2);
    EXPECT_LT(dqkv_error, 2e-2);
    EXPECT_GT(std::min(out_error, dqkv_error), 1e-5) << "the bf16 kernels did not round to bf16";
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedAttention,
                         ::testing::Values(AttentionCase{2, 1, 8, 2, 2, {}},        // one token
                                           AttentionCase{2, 37, 24, 3, 3, {}},      // shorter than a tile
                                           AttentionCase{1, 64, 16, 2, 2, {}},      // exactly one tile
                                           AttentionCase{1, 65, 16, 2, 2, {}},      // one past it
                                           AttentionCase{2, 150, 24, 2, 2, {}},     // ragged third tile
                                           AttentionCase{1, 29, 12, 1, 1, {4, 4}},  // square small tiles
                                           AttentionCase{2, 23, 12, 3, 3, {8, 3}},  // keys narrower than queries
                                           AttentionCase{1, 23, 12, 2, 2, {3, 8}},  // and wider
                                           // grouped-query attention: 2 and 4 query heads per key/value head
                                           AttentionCase{2, 37, 24, 4, 2, {}},
                                           AttentionCase{1, 70, 32, 4, 1, {16, 8}}),
                         case_name);

// The score entries computed: whole tiles along the diagonal, none above it.
TEST(FusedAttention, ComputesTheLowerTriangleInWholeTiles) {
    EXPECT_EQ(attention_scores_computed(64), 64 * 64);
    EXPECT_EQ(attention_scores_computed(5, {2, 3}), 2 * 2 + 2 * 4 + 1 * 5);
    EXPECT_EQ(attention_scores_computed(1024), 64 * 64 * (16 * 17 / 2));
    EXPECT_EQ(attention_scores_computed(100, {1, 1}), 100 * 101 / 2);
}

// Mixed precision runs attention in bf16 only where it pays (attention_in_bf16): a sequence of one bf16 query tile
// (128) in the fp32 kernels, one token more in the bf16 kernels. The bf16 backend must give bitwise what the
// kernel it chose gives.
TEST(FusedAttention, MixedPrecisionRunsSequencesOfOneBf16TileInFp32) {
    for (int const T : {bf16_attention_tiles.queries, bf16_attention_tiles.queries + 1}) {
        AttentionCase const c{1, T, 16, 2, 2, {}};
        bool const in_bf16 = attention_in_bf16(T);
        EXPECT_EQ(in_bf16, T > 128) << T;
        std::vector<double> const qkv = normal_values(static_cast<std::size_t>(T) * 3 * c.C, 1),
                                  dout = normal_values(static_cast<std::size_t>(T) * c.C, 2);
        AttentionCase const kernel_case{1, T, 16, 2, 2, in_bf16 ? bf16_attention_tiles : AttentionTiles{}};
        auto const [out_kernel, dqkv_kernel] =
            in_bf16 ? fused_bf16(kernel_case, qkv, dout) : fused<float>(kernel_case, qkv, dout);

        CpuBackend backend(DType::bf16);
        std::vector<float> const qkv_f(qkv.begin(), qkv.end()), dout_f(dout.begin(), dout.end());
        std::vector<float> out(dout.size()), lse(static_cast<std::size_t>(c.NH) * T);
        std::vector<float> dqkv(qkv.size(), std::numeric_limits<float>::quiet_NaN());
        backend.attention_forward(out.data(), lse.data(), qkv_f.data(), 1, T, c.C, c.NH, c.NKV);
        backend.attention_backward(dqkv.data(), dout_f.data(), qkv_f.data(), out.data(), lse.data(), 1, T, c.C, c.NH,
                                   c.NKV);
        EXPECT_EQ(std::vector<double>(out.begin(), out.end()), out_kernel) << T;
        EXPECT_EQ(std::vector<double>(dqkv.begin(), dqkv.end()), dqkv_kernel) << T;
    }
}

// The bf16 kernels call oneDNN from every thread of their parallel loop over heads, each head's work the same
// whichever thread runs it: on three threads (ctest runs the suites on one) bitwise what one thread gives. With one
// cache of oneDNN primitives shared by the threads, heads came out wrong.
TEST(FusedAttention, Bf16OnThreeThreadsEqualsOneThreadBitwise) {
    AttentionCase const c{2, 200, 64, 4, 2, bf16_attention_tiles};
    std::vector<double> const qkv = normal_values(static_cast<std::size_t>(c.B) * c.T * (c.C + 2 * c.NKV * 16), 3),
                              dout = normal_values(static_cast<std::size_t>(c.B) * c.T * c.C, 4);
    int const threads_before = omp_get_max_threads();
    omp_set_num_threads(1);
    auto const [out_one, dqkv_one] = fused_bf16(c, qkv, dout);
    omp_set_num_threads(3);
    auto const [out_three, dqkv_three] = fused_bf16(c, qkv, dout);
    omp_set_num_threads(threads_before);
    EXPECT_EQ(out_three, out_one);
    EXPECT_EQ(dqkv_three, dqkv_one);
}

}  // namespace
}  // namespace axonn::cpu
