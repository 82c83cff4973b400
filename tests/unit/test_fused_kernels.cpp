// Each fused memory-bound kernel against the unfused sequence it replaces, bit for bit (the arithmetic is the
// same, only the passes over memory are fewer), on one thread and on three (whose column strips and row blocks
// end mid-vector), in a table as in ggml's op tests:
//   bias_gelu       the Linear's GEMM writes its product with the bias (linear_forward's own add), then GELU
//                   against the GEMM without the bias, then bias and GELU in one pass;
//   gelu_bias       GELU's input gradient, then the Linear's weight gradient summing the bias gradient from it,
//                   against GELU's pass summing the bias gradient itself;
//   residual_norm   the residual add, then LayerNorm's (or RMSNorm's) statistics of the sum, against both in one
//                   pass, the sum written over one of its inputs as the decoder does;
//   gelu_in_place   GELU's input gradient written over its output gradient, as the decoder does, against two
//                   buffers;
//   cross_entropy_max_and_sums  each row's maximum and then its sums in one pass over the rows, against every
//                   row's maximum, then every row's sums;
//   cross_entropy_forward_backward  the losses and the gradient of the logits (fp32 over the logits, or its bf16
//                   rounding) in one pass over the rows, against the maxima, the sums, the losses and the gradient
//                   one after the other;
//   bias_gelu_kept_bf16  bias + GELU keeping the sum as its bf16 rounding alone (mixed precision's kept
//                   pre-activation), against the pass in place and a rounding of the sum (and the sum itself, as a
//                   check of what the in-place pass wrote);
//   swiglu_held_bf16  SwiGLU's backward reading [gate | up] kept as its bf16 rounding, against the rounding
//                   widened and the fp32 pass;
//   gelu_bias_held_bf16  GELU's backward reading the pre-activation kept as its bf16 rounding and writing the input
//                   gradient as its rounding (mixed precision: the Linear's GEMMs read nothing else), against the
//                   rounding widened, the fp32 pass, and its output rounded;
//   adamw_clip_bf16 the gradients scaled by the clipping coefficient, AdamW, then the weights rounded to bf16 (the
//                   GEMMs' copy), against AdamW folding the scale in and writing the copy in its one pass;
//   *_to_bf16       a kernel whose output only GEMMs read (LayerNorm, RMSNorm, bias + GELU, SwiGLU, the
//                   cross-entropy's gradient of the logits) writing fp32 that is then rounded to bf16 (what a bf16
//                   GEMM did with it), against the kernel writing bf16.
// Shapes are odd (F = 77 is not a multiple of 16) and the bias gradient starts from nonzero values, as it does
// in a step's later passes.
#include "axonn/kernels/cpu/adamw.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/cross_entropy.h"
#include "axonn/kernels/cpu/gelu.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/layernorm.h"
#include "axonn/kernels/cpu/residual.h"
#include "axonn/kernels/cpu/rmsnorm.h"
#include "axonn/kernels/cpu/swiglu.h"

#include "axonn/core/rng.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
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

    friend void PrintTo(FusionCase const& fusion, std::ostream* out) { *out << fusion.name; }
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

// bf16 values widened to fp32, exactly, to be compared bit for bit as the rest.
std::vector<float> widened(std::vector<bfloat16> const& rounded) {
    std::vector<float> values(rounded.size());
    to_f32(values.data(), rounded.data(), static_cast<std::int64_t>(rounded.size()));
    return values;
}

std::vector<bfloat16> rounded(std::vector<float> const& values) {
    std::vector<bfloat16> rounding(values.size());
    to_bf16(rounding.data(), values.data(), static_cast<std::int64_t>(values.size()));
    return rounding;
}

// A kernel `write(out, x)` of `n` outputs whose output only GEMMs read: fp32 rounded to bf16 afterwards against
// bf16 written by the kernel itself.
template <typename Write> FusionCase rounded_output_case(std::string name, std::int64_t n, Write write) {
    return {std::move(name),
            [=](Operands const& x) {
                std::vector<float> out(n);
                write(out.data(), x);
                std::vector<bfloat16> rounded(n);
                to_bf16(rounded.data(), out.data(), n);
                return Results{{"out", widened(rounded)}};
            },
            [=](Operands const& x) {
                std::vector<bfloat16> rounded(n);
                write(rounded.data(), x);
                return Results{{"out", widened(rounded)}};
            }};
}

// Each row's statistics over F channels, as the norms' first phase leaves them: (Σx, Σx²) or Σx².
std::vector<double> row_statistics(std::vector<float> const& inp, bool layernorm) {
    std::vector<double> stats(M * (layernorm ? 2 : 1));
    if (layernorm) {
        layernorm_statistics<float>(stats.data(), inp.data(), M, F);
    } else {
        rmsnorm_statistics<float>(stats.data(), inp.data(), M, F);
    }
    return stats;
}

// The cross-entropy's gradient over a vocabulary slice of V columns from id 5, the last 100 padding: rows whose
// target is in the slice (in its first, second and third block of 1,024 columns, which the bf16 kernel computes
// one at a time), outside it, and ignored; each row's weight from dout.
FusionCase cross_entropy_gradient_case() {
    constexpr std::int64_t rows = 7;
    constexpr int V = 2500;
    return rounded_output_case("cross_entropy_backward_to_bf16", rows * V, [](auto* out, Operands const& x) {
        constexpr int valid = V - 100, begin = 5;
        std::vector<float> const logits = random_values(rows * V, 7, 4.0f);
        std::vector<std::int32_t> const targets = {begin + 3, begin + 1500, ignore_index, begin + 2399, 2, begin + 2450,
                                                   begin + 1023};
        std::vector<float> row_max(rows), losses(rows), logsumexp(rows);
        std::vector<double> sums(2 * rows);
        cross_entropy_max<float>(row_max.data(), logits.data(), rows, valid, V);
        cross_entropy_sums<float>(sums.data(), logits.data(), row_max.data(), targets.data(), rows, valid, V, begin);
        cross_entropy_losses<float>(losses.data(), logsumexp.data(), row_max.data(), sums.data(), targets.data(), rows);
        cross_entropy_backward(out, logits.data(), logsumexp.data(), targets.data(), x.dout.data(), rows, valid, V,
                               begin);
    });
}

// The cross-entropy's statistics over a slice of V columns from id 5, the last 100 padding: targets inside it,
// outside it, and ignored.
FusionCase cross_entropy_statistics_case() {
    constexpr std::int64_t rows = 7;
    constexpr int V = 2500, valid = V - 100, begin = 5;
    struct Statistics {
        std::vector<float> logits = random_values(rows * V, 8, 4.0f), row_max = std::vector<float>(rows);
        std::vector<std::int32_t> targets = {begin + 3, begin + 1500, ignore_index, begin + 2399, 2, begin + 2450, 0};
        std::vector<double> sums = std::vector<double>(2 * rows);
        Results results() const { return {{"row_max", row_max}, {"sums", bits_of(sums)}}; }
    };
    return {"cross_entropy_max_and_sums",
            [](Operands const&) {
                Statistics s;
                cross_entropy_max<float>(s.row_max.data(), s.logits.data(), rows, valid, V);
                cross_entropy_sums<float>(s.sums.data(), s.logits.data(), s.row_max.data(), s.targets.data(), rows,
                                          valid, V, begin);
                return s.results();
            },
            [](Operands const&) {
                Statistics s;
                cross_entropy_max_and_sums<float>(s.row_max.data(), s.sums.data(), s.logits.data(), s.targets.data(),
                                                  rows, valid, V, begin);
                return s.results();
            }};
}

// The whole cross-entropy in one pass over the rows, the whole vocabulary of V columns here, the last 100 padding
// (targets in the first, second and third block of 1,024 columns, and ignored), each row's weight from dout: against
// the phases one after the other, the gradient in fp32 written over the logits (as the decoder does) or as its
// bf16 rounding.
template <typename Out> FusionCase cross_entropy_forward_backward_case(std::string name) {
    constexpr std::int64_t rows = 7;
    constexpr int V = 2500, valid = V - 100;
    struct CrossEntropy {
        std::vector<float> logits = random_values(rows * V, 9, 4.0f), losses = std::vector<float>(rows),
                           logsumexp = std::vector<float>(rows);
        std::vector<std::int32_t> targets = {3, 1500, ignore_index, 2399, 0, 1023, 1024};
        std::vector<Out> dlogits = std::vector<Out>(rows * V);
        Results results() const {
            std::vector<float> gradient(dlogits.size());
            if constexpr (std::is_same_v<Out, float>) {
                gradient = logits;  // written over the logits
            } else {
                gradient = widened(dlogits);
            }
            return {{"losses", losses}, {"logsumexp", logsumexp}, {"dlogits", gradient}};
        }
        Out* gradient_buffer() {
            if constexpr (std::is_same_v<Out, float>) {
                return logits.data();
            } else {
                return dlogits.data();
            }
        }
    };
    return {std::move(name),
            [](Operands const& x) {
                CrossEntropy c;
                std::vector<float> row_max(rows);
                std::vector<double> sums(2 * rows);
                cross_entropy_max<float>(row_max.data(), c.logits.data(), rows, valid, V);
                cross_entropy_sums<float>(sums.data(), c.logits.data(), row_max.data(), c.targets.data(), rows, valid,
                                          V, 0);
                cross_entropy_losses<float>(c.losses.data(), c.logsumexp.data(), row_max.data(), sums.data(),
                                            c.targets.data(), rows);
                cross_entropy_backward(c.gradient_buffer(), c.logits.data(), c.logsumexp.data(), c.targets.data(),
                                       x.dout.data(), rows, valid, V, 0);
                return c.results();
            },
            [](Operands const& x) {
                CrossEntropy c;
                cross_entropy_forward_backward(c.losses.data(), c.logsumexp.data(), c.gradient_buffer(),
                                               c.logits.data(), c.targets.data(), x.dout.data(), rows, valid, V);
                return c.results();
            }};
}

std::vector<FusionCase> rounded_output_cases() {
    return {
        rounded_output_case("layernorm_to_bf16", M * F,
                            [](auto* out, Operands const& x) {
                                std::vector<double> const stats = row_statistics(x.pre, true);
                                std::vector<float> mean(M), rstd(M);
                                layernorm_forward<float>(out, mean.data(), rstd.data(), x.pre.data(), x.dout.data(),
                                                         x.dout.data() + F, stats.data(), M, F, F);
                            }),
        rounded_output_case("rmsnorm_to_bf16", M * F,
                            [](auto* out, Operands const& x) {
                                std::vector<double> const stats = row_statistics(x.pre, false);
                                std::vector<float> rstd(M);
                                rmsnorm_forward<float>(out, rstd.data(), x.pre.data(), x.dout.data(), stats.data(), M,
                                                       F, F, 1e-5);
                            }),
        rounded_output_case("bias_gelu_to_bf16", M * F,
                            [](auto* out, Operands const& x) {
                                std::vector<float> pre = x.pre;
                                bias_gelu_forward<float>(out, pre.data(), x.bias.data(), M, F);
                            }),
        // SwiGLU halves the width: [gate | up] rows of 2 · 38 channels from pre's.
        rounded_output_case("swiglu_to_bf16", M * (F / 2),
                            [](auto* out, Operands const& x) { swiglu_forward<float>(out, x.pre.data(), M, F / 2); }),
        cross_entropy_gradient_case(),
    };
}

// AdamW's one pass over the parameters, [M·F] of them (m and v from an earlier step, the gradients of odd sizes
// as a step's are), at step 3 with weight decay and a clipping coefficient below 1.
FusionCase adamw_case() {
    static constexpr AdamWStep step{0.01f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.37f, 3};
    struct State {
        std::vector<float> param, m, v;
        explicit State(Operands const& x) : param(x.pre), m(x.dout), v(x.dout) {
            for (float& value : v) value *= value;  // a second moment is positive
        }
    };
    auto const unfused = [](Operands const& x) {
        State state(x);
        std::vector<float> grad = x.dout;
        for (float& g : grad) g *= step.grad_scale;
        AdamWStep unscaled = step;
        unscaled.grad_scale = 1.0f;
        adamw_update(state.param.data(), grad.data(), state.m.data(), state.v.data(), M * F, unscaled);
        return Results{{"param", state.param}, {"m", state.m}, {"v", state.v},
                       {"param_bf16", widened(rounded(state.param))}};
    };
    auto const fused = [](Operands const& x) {
        State state(x);
        std::vector<bfloat16> copy(M * F);
        adamw_update(state.param.data(), x.dout.data(), state.m.data(), state.v.data(), M * F, step, copy.data());
        return Results{{"param", state.param}, {"m", state.m}, {"v", state.v}, {"param_bf16", widened(copy)}};
    };
    return {"adamw_clip_bf16", unfused, fused};
}

std::vector<FusionCase> fusion_cases() {
    std::vector<FusionCase> cases = rounded_output_cases();
    cases.push_back(adamw_case());
    std::vector<FusionCase> const passes = {
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
    cases.insert(cases.end(), passes.begin(), passes.end());
    cases.push_back(cross_entropy_statistics_case());
    cases.push_back(cross_entropy_forward_backward_case<float>("cross_entropy_forward_backward"));
    cases.push_back(cross_entropy_forward_backward_case<bfloat16>("cross_entropy_forward_backward_bf16"));
    cases.push_back({"gelu_in_place",
                     [](Operands const& x) {
                         std::vector<float> dpre(M * F), dbias = x.dbias_before;
                         gelu_bias_backward<float>(dpre.data(), dbias.data(), x.pre.data(), x.dout.data(), M, F);
                         return Results{{"dpre", dpre}, {"dbias", dbias}};
                     },
                     [](Operands const& x) {
                         std::vector<float> gradient = x.dout, dbias = x.dbias_before;
                         gelu_bias_backward<float>(gradient.data(), dbias.data(), x.pre.data(), gradient.data(), M, F);
                         return Results{{"dpre", gradient}, {"dbias", dbias}};
                     }});
    cases.push_back({"bias_gelu_kept_bf16",
                     [](Operands const& x) {
                         std::vector<float> pre = x.pre;
                         std::vector<bfloat16> out(M * F);
                         bias_gelu_forward<float>(out.data(), pre.data(), x.bias.data(), M, F);
                         return Results{{"out", widened(out)}, {"kept", widened(rounded(pre))}, {"pre", pre}};
                     },
                     [](Operands const& x) {
                         std::vector<bfloat16> out(M * F), kept(M * F);
                         bias_gelu_forward(out.data(), kept.data(), x.pre.data(), x.bias.data(), M, F);
                         std::vector<float> pre_with_bias = x.pre;
                         for (std::int64_t i = 0; i < M * F; ++i) pre_with_bias[i] += x.bias[i % F];
                         return Results{{"out", widened(out)}, {"kept", widened(kept)}, {"pre", pre_with_bias}};
                     }});
    // SwiGLU's [gate | up] rows of 2 · 38 channels from pre's, and its output's gradient from dout's.
    cases.push_back({"swiglu_held_bf16",
                     [](Operands const& x) {
                         std::vector<float> const inp = widened(rounded(x.pre));
                         std::vector<float> dinp(M * F);
                         swiglu_backward<float>(dinp.data(), inp.data(), x.dout.data(), M, F / 2);
                         return Results{{"dinp", dinp}};
                     },
                     [](Operands const& x) {
                         std::vector<bfloat16> const inp = rounded(x.pre);
                         std::vector<float> dinp(M * F);
                         swiglu_backward<float>(dinp.data(), inp.data(), x.dout.data(), M, F / 2);
                         return Results{{"dinp", dinp}};
                     }});
    cases.push_back({"gelu_bias_held_bf16",
                     [](Operands const& x) {
                         std::vector<bfloat16> const pre = rounded(x.pre);
                         std::vector<float> const pre_widened = widened(pre);
                         std::vector<float> dpre(M * F), dbias = x.dbias_before;
                         gelu_bias_backward<float>(dpre.data(), dbias.data(), pre_widened.data(), x.dout.data(), M, F);
                         return Results{{"dpre", widened(rounded(dpre))}, {"dbias", dbias}};
                     },
                     [](Operands const& x) {
                         std::vector<bfloat16> const pre = rounded(x.pre);
                         std::vector<bfloat16> dpre(M * F);
                         std::vector<float> dbias = x.dbias_before;
                         gelu_bias_backward<float>(dpre.data(), dbias.data(), pre.data(), x.dout.data(), M, F);
                         return Results{{"dpre", widened(dpre)}, {"dbias", dbias}};
                     }});
    return cases;
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
