// Backend::gemm_input: a Linear's dout, rounded once for its two backward GEMMs (dX and dW) instead of once in each.
// The rounding is the same function either way, so the gradients must be bitwise those of rounding in each GEMM,
// and the held copy must survive the kernels that round operands of their own in between (attention, the dW
// GEMM's inp). In fp32 nothing is copied: gemm_input hands back its argument.
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu_backend.h"

#include "axonn/core/rng.h"
#include "axonn/core/tensor.h"

#include <gtest/gtest.h>

#include <vector>

namespace axonn {
namespace {

constexpr std::int64_t M = 24, K = 20, N = 36;

std::vector<float> normal_values(std::int64_t n, std::uint64_t stream) {
    std::vector<float> values(static_cast<std::size_t>(n));
    fill_normal(values, PhiloxKey{7, stream}, 0, 0.0f, 1.0f);
    return values;
}

struct LinearGradients {
    std::vector<float> dinp = std::vector<float>(M * K), dweight = std::vector<float>(N * K),
                       dbias = std::vector<float>(N, 0.0f);
};

class GemmInputTest : public ::testing::TestWithParam<DType> {
protected:
    void SetUp() override {
        if (GetParam() == DType::bf16) cpu::to_bf16(weight_bf16.data(), weight.data(), N * K);
    }
    WeightView weight_view() const {
        return GetParam() == DType::bf16 ? WeightView{weight_bf16.data(), DType::bf16}
                                         : WeightView{weight.data(), DType::f32};
    }
    // dX, then dW (the model runs dW first when O has one member: the order does not change the rounding)
    void backward(CpuBackend& backend, GemmInput dout_input, LinearGradients& out) const {
        backend.linear_backward_input(out.dinp.data(), dout_input, weight_view(), M, K, N);
        backend.linear_backward_weight(out.dweight.data(), out.dbias.data(), dout_input, inp.data(), M, K, N,
                                       GradWrite::overwrite);
    }

    std::vector<float> inp = normal_values(M * K, 1), weight = normal_values(N * K, 2), dout = normal_values(M * N, 3);
    std::vector<bfloat16> weight_bf16 = std::vector<bfloat16>(N * K);
};

TEST_P(GemmInputTest, RoundedOnceGivesTheGradientsOfRoundingInEachGemm) {
    CpuBackend backend(GetParam());
    LinearGradients each, once;
    backward(backend, GemmInput::unrounded(dout.data()), each);
    backward(backend, backend.gemm_input(dout.data(), M * N), once);
    EXPECT_EQ(each.dinp, once.dinp);
    EXPECT_EQ(each.dweight, once.dweight);
    EXPECT_EQ(each.dbias, once.dbias);
}

TEST_P(GemmInputTest, TheHeldCopySurvivesKernelsThatRoundTheirOwnOperands) {
    CpuBackend backend(GetParam());
    LinearGradients expected, held_across;
    backward(backend, GemmInput::unrounded(dout.data()), expected);

    GemmInput const held = backend.gemm_input(dout.data(), M * N);
    // Other kernels round other operands meanwhile: a forward (its inp) and an attention (its qkv and dout).
    int const B = 2, T = 4, C = 8, NH = 2;
    std::vector<float> qkv = normal_values(B * T * 3 * C, 4), att = std::vector<float>(B * T * C),
                       lse = std::vector<float>(B * NH * T), datt = normal_values(B * T * C, 5),
                       dqkv = std::vector<float>(B * T * 3 * C, 0.0f), out = std::vector<float>(M * N);
    backend.linear_forward(out.data(), inp.data(), weight_view(), nullptr, M, K, N);
    backend.attention_forward(att.data(), lse.data(), qkv.data(), B, T, C, NH, NH);
    backend.attention_backward(dqkv.data(), datt.data(), qkv.data(), att.data(), lse.data(), B, T, C, NH, NH);
    backward(backend, held, held_across);

    EXPECT_EQ(expected.dinp, held_across.dinp);
    EXPECT_EQ(expected.dweight, held_across.dweight);
}

TEST_P(GemmInputTest, ChunksOfRowsReadTheirRowsOfTheHeldCopy) {
    CpuBackend backend(GetParam());
    std::int64_t const first = M / 3;
    // dinp's rows in two chunks, as the model's chunked all-reduce computes them
    auto chunked = [&](GemmInput head, GemmInput tail) {
        std::vector<float> dinp(M * K);
        backend.linear_backward_input(dinp.data(), head, weight_view(), first, K, N);
        backend.linear_backward_input(dinp.data() + first * K, tail, weight_view(), M - first, K, N);
        return dinp;
    };
    std::vector<float> const each =
        chunked(GemmInput::unrounded(dout.data()), GemmInput::unrounded(dout.data() + first * N));
    GemmInput const held = backend.gemm_input(dout.data(), M * N);
    EXPECT_EQ(each, chunked(held, held.rows_from(first, N)));
}

TEST(GemmInput, InFp32IsTheInputItself) {
    CpuBackend backend(DType::f32);
    std::vector<float> const x(10, 1.5f);
    GemmInput const input = backend.gemm_input(x.data(), 10);
    EXPECT_EQ(input.values, x.data());
    EXPECT_EQ(input.rounded, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Precisions, GemmInputTest, ::testing::Values(DType::f32, DType::bf16),
                         [](::testing::TestParamInfo<DType> const& info) { return dtype_name(info.param); });

}  // namespace
}  // namespace axonn
