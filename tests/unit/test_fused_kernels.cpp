// Each fused memory-bound kernel against the unfused sequence it replaces, bit for bit (the arithmetic is the
// same, only the passes over memory are fewer), on one thread and on three (whose column strips and row blocks
// end mid-vector), in a table as in ggml's op tests:
//   bias_gelu       the Linear's GEMM writes its product with the bias (linear_forward's own add), then GELU
//                   against the GEMM without the bias, then bias and GELU in one pass;
//   gelu_bias       GELU's input gradient, then the Linear's weight gradient summing the bias gradient from it,
//                   against GELU's pass summing the bias gradient itself;
//   residual_norm   the residual add, then LayerNorm's (or RMSNorm's) statistics of the sum, against both in one
//                   pass, the sum written over one of its inputs as the decoder does.
// Shapes are odd (F = 77 is not a multiple of 16) and the bias gradient starts from nonzero values, as it does
// in a step's later passes.
#include "axonn/kernels/cpu/gelu.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/layernorm.h"
#include "axonn/kernels/cpu/residual.h"
#include "axonn/kernels/cpu/rmsnorm.h"

#include "axonn/core/rng.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace axonn::cpu {
namespace {

constexpr std::int64_t M = 131;  // rows (tokens)
constexpr std::int64_t K = 24;   // the Linear's inputs
constexpr int F = 77;            // its outputs, GELU's width

std::vector<float> random_values(std::size_t n, std::uint32_t stream, float scale) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) {
        values[i] = scale * (static_cast<float>(philox4x32({11, stream}, i)[0] >> 8) * 0x1p-23f - 1.0f);
    }
    return values;
}

struct Operands {
    std::vector<float> inp = random_values(M * K, 1, 1.0f), weight = random_values(F * K, 2, 0.5f),
                       bias = random_values(F, 3, 1.0f), dout = random_values(M * F, 4, 1.0f),
                       dbias_before = random_values(F, 5, 0.1f), pre = random_values(M * F, 6, 4.0f);
};

// A sequence's results, named, to be compared bit for bit.
using Results = std::vector<std::pair<std::string, std::vector<float>>>;

struct FusionCase {
    std::string name;
    std::function<Results(Operands const&)> unfused, fused;
};

// stats as doubles' bits, in floats' clothing: two floats per double, compared bit for bit as the rest.
std::vector<float> bits_of(std::vector<double> const& stats) {
    std::vector<float> bits(2 * stats.size());
    std::memcpy(bits.data(), stats.data(), stats.size() * sizeof(double));
    return bits;
}

// residual_norm for LayerNorm's statistics or RMSNorm's: stats[N,2] or [N].
FusionCase residual_norm_case(bool layernorm) {
    std::size_t const stats_per_row = layernorm ? 2 : 1;
    return {layernorm ? "residual_layernorm" : "residual_rmsnorm",
            [=](Operands const& x) {
                std::vector<float> sum = x.pre;  // the branch's output, the sum's buffer
                std::vector<double> stats(M * stats_per_row);
                residual_forward<float>(sum.data(), x.dout.data(), sum.data(), M * F);
                if (layernorm) {
                    layernorm_statistics<float>(stats.data(), sum.data(), M, F);
                } else {
                    rmsnorm_statistics<float>(stats.data(), sum.data(), M, F);
                }
                return Results{{"sum", sum}, {"stats", bits_of(stats)}};
            },
            [=](Operands const& x) {
                std::vector<float> sum = x.pre;
                std::vector<double> stats(M * stats_per_row);
                residual_norm_statistics<float>(sum.data(), x.dout.data(), sum.data(), stats.data(), M, F, layernorm);
                return Results{{"sum", sum}, {"stats", bits_of(stats)}};
            }};
}

std::vector<FusionCase> fusion_cases() {
    return {
        residual_norm_case(true),
        residual_norm_case(false),
        {"bias_gelu",
         [](Operands const& x) {
             std::vector<float> pre(M * F), out(M * F);
             linear_forward<float>(pre.data(), x.inp.data(), x.weight.data(), x.bias.data(), M, K, F);
             bias_gelu_forward<float>(out.data(), pre.data(), nullptr, M, F);
             return Results{{"pre", pre}, {"out", out}};
         },
         [](Operands const& x) {
             std::vector<float> pre(M * F), out(M * F);
             linear_forward<float>(pre.data(), x.inp.data(), x.weight.data(), nullptr, M, K, F);
             bias_gelu_forward<float>(out.data(), pre.data(), x.bias.data(), M, F);
             return Results{{"pre", pre}, {"out", out}};
         }},
        {"gelu_bias",
         [](Operands const& x) {
             std::vector<float> dpre(M * F), dweight(F * K), dbias = x.dbias_before;
             gelu_bias_backward<float>(dpre.data(), nullptr, x.pre.data(), x.dout.data(), M, F);
             linear_backward_weight<float>(dweight.data(), dbias.data(), dpre.data(), x.inp.data(), M, K, F,
                                           GradWrite::overwrite);
             return Results{{"dpre", dpre}, {"dweight", dweight}, {"dbias", dbias}};
         },
         [](Operands const& x) {
             std::vector<float> dpre(M * F), dweight(F * K), dbias = x.dbias_before;
             gelu_bias_backward<float>(dpre.data(), dbias.data(), x.pre.data(), x.dout.data(), M, F);
             linear_backward_weight<float>(dweight.data(), nullptr, dpre.data(), x.inp.data(), M, K, F,
                                           GradWrite::overwrite);
             return Results{{"dpre", dpre}, {"dweight", dweight}, {"dbias", dbias}};
         }},
    };
}

class FusedKernels : public ::testing::TestWithParam<std::tuple<FusionCase, int>> {};

TEST_P(FusedKernels, EqualTheUnfusedSequenceBitForBit) {
    auto const& [fusion, threads] = GetParam();
    int const threads_before = omp_get_max_threads();
    omp_set_num_threads(threads);
    Operands const operands;
    Results const unfused = fusion.unfused(operands), fused = fusion.fused(operands);
    omp_set_num_threads(threads_before);
    ASSERT_EQ(unfused.size(), fused.size());
    for (std::size_t r = 0; r < unfused.size(); ++r) {
        auto const& [name, expected] = unfused[r];
        std::vector<float> const& actual = fused[r].second;
        ASSERT_EQ(actual.size(), expected.size()) << name;
        EXPECT_EQ(std::memcmp(actual.data(), expected.data(), expected.size() * sizeof(float)), 0)
            << name << " differs from the unfused sequence's";
    }
}

INSTANTIATE_TEST_SUITE_P(OneAndThreeThreads, FusedKernels,
                         ::testing::Combine(::testing::ValuesIn(fusion_cases()), ::testing::Values(1, 3)),
                         [](auto const& info) {
                             return std::get<0>(info.param).name + "_" + std::to_string(std::get<1>(info.param)) +
                                    "_threads";
                         });

}  // namespace
}  // namespace axonn::cpu
