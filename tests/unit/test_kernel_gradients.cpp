// Every kernel's backward against central finite differences of its own forward, both run in double precision
// (the kernels are templates; the fp32 instantiation is what trains). One table, one case per kernel, in the
// manner of ggml's test-backend-ops: a case names its inputs and wires the kernel's forward and backward.
//
// For each case: loss = Σ out ⊙ w with a fixed random w. The analytic gradient is backward(dout = w); the
// numeric one is (loss(x + ε) − loss(x − ε)) / 2ε with ε = 1e-6. Truncation error is O(ε²) ≈ 1e-12 and
// round-off ≈ 1e-16 / ε = 1e-10, so a correct backward agrees to well under the 1e-7 relative tolerance.
// Gradients must also accumulate (+=) into what the buffer held before, except where a case says its backward
// overwrites (cross-entropy's dlogits; attention's dqkv; a linear layer's dweight in GradWrite::overwrite mode).
// A second check runs the same forward through the Backend interface, as the model calls it, on an fp32 backend
// and on a bf16 one (mixed precision) with the same inputs. fp32 must match the double forward to 1e-5 relative
// (norm-wise), which covers oneDNN, the vectorised exp/tanh, and single-precision accumulation. In bf16 only the
// GEMM kernels (and the lookup of bf16 embedding rows) read rounded inputs: a case that has them states its own
// tolerance; every other kernel must still match to 1e-5.
#include "axonn/kernels/backend.h"
#include "axonn/kernels/cpu/attention.h"
#include "axonn/kernels/cpu/cross_entropy.h"
#include "axonn/kernels/cpu/encoder.h"
#include "axonn/kernels/cpu/gelu.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/layernorm.h"
#include "axonn/kernels/cpu/residual.h"
#include "axonn/kernels/cpu/rmsnorm.h"
#include "axonn/kernels/cpu/rope.h"
#include "axonn/kernels/cpu/swiglu.h"
#include "axonn/kernels/rope_frequencies.h"

#include "axonn/core/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace axonn::cpu {
namespace {

template <typename T> using Buffers = std::map<std::string, std::vector<T>>;

struct InputSpec {
    std::string name;
    std::size_t size;
    double scale;  // values drawn uniformly from (−scale, scale)
};

struct KernelCase {
    std::string name;
    std::vector<InputSpec> inputs;
    std::size_t output_size;
    std::vector<std::string> overwritten;  // inputs whose gradient the backward writes instead of accumulating
    // forward(inputs, out): computes the output; backward(inputs, dout, grads): fills grads["d" + input name]
    std::function<void(Buffers<double>&, std::vector<double>&)> forward_double;
    std::function<void(Backend&, Buffers<float>&, std::vector<float>&)> forward_backend;
    std::function<void(Buffers<double>&, std::vector<double> const&, Buffers<double>&)> backward;
    // The bf16 backend's forward against the double one: 1e-5 unless the kernel reads bf16-rounded inputs. Each
    // rounding errs by at most 2⁻⁹ relative, a product of two by 2⁻⁸; with the cancellation of random signs in
    // sums this short the norm-wise error stays below 1e-2 (measured 0.8-2.4e-3).
    double bf16_tolerance = 1e-5;

    friend void PrintTo(KernelCase const& kernel, std::ostream* out) { *out << kernel.name; }
};

// Shapes are awkward on purpose (odd sizes, C not a multiple of the vector width).
constexpr int B = 2, T_ = 5, C = 12, NH = 3, V = 7, Vp = 8, N_rows = 4, maxT = 6;
std::vector<std::int32_t> const tokens = {3, 0, 6, 6, 1, 2, 5, 4, 0, 3};        // [B,T] into V
std::vector<std::int32_t> const ce_targets = {2, ignore_index, 6, 0};           // [N_rows]

template <typename T> T* at(Buffers<T>& buffers, std::string const& name) { return buffers.at(name).data(); }

// The double forward, from the kernels' templates.
#define AXONN_FORWARD(...) [](Buffers<double>& in, std::vector<double>& out) { using T = double; (void)in; __VA_ARGS__; }
// The forward through a Backend, in its precision.
#define AXONN_BACKEND_FORWARD(...) [](Backend& k, Buffers<float>& in, std::vector<float>& out) { (void)in; __VA_ARGS__; }

// A weight as the backend's GEMMs take it: the fp32 values, or their bf16 rounding.
struct GemmWeight {
    std::vector<bfloat16> rounded;
    WeightView view;

    GemmWeight(Backend& backend, std::vector<float> const& values) : rounded(values.size()) {
        if (backend.gemm_dtype() == DType::f32) {
            view = {values.data(), DType::f32};
            return;
        }
        backend.convert(rounded.data(), DType::bf16, values.data(), DType::f32, static_cast<std::int64_t>(values.size()));
        view = {rounded.data(), DType::bf16};
    }
};
constexpr double gemm_bf16_tolerance = 1e-2;

std::vector<KernelCase> kernel_cases() {
    std::vector<KernelCase> cases;
    // The backward's two halves: dinp is written (overwritten), dweight accumulated or overwritten, dbias accumulated.
    auto const linear_5x7x6 = AXONN_BACKEND_FORWARD(
        GemmWeight const weight(k, in.at("weight"));
        k.linear_forward(out.data(), at(in, "inp"), weight.view, at(in, "bias"), 5, 7, 6));
    cases.push_back({"linear", {{"inp", 5 * 7, 1.0}, {"weight", 6 * 7, 1.0}, {"bias", 6, 1.0}}, 5 * 6, {"inp"},
                     AXONN_FORWARD(linear_forward<T>(out.data(), at(in, "inp"), at(in, "weight"), at(in, "bias"), 5, 7, 6)),
                     linear_5x7x6,
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         linear_backward_input<double>(at(d, "dinp"), dout.data(), at(in, "weight"), 5, 7, 6);
                         linear_backward_weight<double>(at(d, "dweight"), at(d, "dbias"), dout.data(), at(in, "inp"),
                                                        5, 7, 6, GradWrite::accumulate);
                     },
                     gemm_bf16_tolerance});
    cases.push_back({"linear_overwrite", {{"inp", 5 * 7, 1.0}, {"weight", 6 * 7, 1.0}, {"bias", 6, 1.0}}, 5 * 6,
                     {"inp", "weight"},
                     AXONN_FORWARD(linear_forward<T>(out.data(), at(in, "inp"), at(in, "weight"), at(in, "bias"), 5, 7, 6)),
                     linear_5x7x6,
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         linear_backward_input<double>(at(d, "dinp"), dout.data(), at(in, "weight"), 5, 7, 6);
                         linear_backward_weight<double>(at(d, "dweight"), at(d, "dbias"), dout.data(), at(in, "inp"),
                                                        5, 7, 6, GradWrite::overwrite);
                     },
                     gemm_bf16_tolerance});
    cases.push_back({"linear_no_bias", {{"inp", 3 * 4, 1.0}, {"weight", 9 * 4, 1.0}}, 3 * 9, {"inp"},
                     AXONN_FORWARD(linear_forward<T>(out.data(), at(in, "inp"), at(in, "weight"), nullptr, 3, 4, 9)),
                     AXONN_BACKEND_FORWARD(GemmWeight const weight(k, in.at("weight"));
                                           k.linear_forward(out.data(), at(in, "inp"), weight.view, nullptr, 3, 4, 9)),
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         linear_backward_input<double>(at(d, "dinp"), dout.data(), at(in, "weight"), 3, 4, 9);
                         linear_backward_weight<double>(at(d, "dweight"), nullptr, dout.data(), at(in, "inp"), 3, 4, 9,
                                                        GradWrite::accumulate);
                     },
                     gemm_bf16_tolerance});
    cases.push_back({"encoder", {{"wte", Vp * C, 1.0}, {"wpe", maxT * C, 1.0}}, B * T_ * C, {},
                     AXONN_FORWARD(encoder_forward<T>(out.data(), tokens.data(), at(in, "wte"), at(in, "wpe"), B, T_, C,
                                                      0, Vp)),
                     AXONN_BACKEND_FORWARD(GemmWeight const wte(k, in.at("wte"));
                                           k.encoder_forward(out.data(), tokens.data(), wte.view, at(in, "wpe"), B,
                                                             T_, C, 0, Vp)),
                     [](Buffers<double>&, std::vector<double> const& dout, Buffers<double>& d) {
                         encoder_backward<double>(at(d, "dwte"), at(d, "dwpe"), dout.data(), tokens.data(), B, T_, C,
                                                  0, Vp);
                     },
                     gemm_bf16_tolerance});
    // A vocabulary slice (ids 2..5) as one Y rank holds it: other tokens contribute nothing here.
    cases.push_back({"encoder_vocab_slice", {{"wte", 4 * C, 1.0}, {"wpe", maxT * C, 1.0}}, B * T_ * C, {},
                     AXONN_FORWARD(encoder_forward<T>(out.data(), tokens.data(), at(in, "wte"), at(in, "wpe"), B, T_, C,
                                                      2, 4)),
                     AXONN_BACKEND_FORWARD(GemmWeight const wte(k, in.at("wte"));
                                           k.encoder_forward(out.data(), tokens.data(), wte.view, at(in, "wpe"), B,
                                                             T_, C, 2, 4)),
                     [](Buffers<double>&, std::vector<double> const& dout, Buffers<double>& d) {
                         encoder_backward<double>(at(d, "dwte"), at(d, "dwpe"), dout.data(), tokens.data(), B, T_, C,
                                                  2, 4);
                     },
                     gemm_bf16_tolerance});
    cases.push_back({"layernorm", {{"inp", N_rows * C, 2.0}, {"weight", C, 1.5}, {"bias", C, 1.0}}, N_rows * C, {},
                     AXONN_FORWARD(std::vector<T> mean(N_rows), rstd(N_rows); std::vector<double> stats(2 * N_rows);
                                   layernorm_statistics<T>(stats.data(), at(in, "inp"), N_rows, C);
                                   layernorm_forward<T>(out.data(), mean.data(), rstd.data(), at(in, "inp"),
                                                        at(in, "weight"), at(in, "bias"), stats.data(), N_rows, C, C)),
                     AXONN_BACKEND_FORWARD(std::vector<float> mean(N_rows), rstd(N_rows);
                                           std::vector<double> stats(2 * N_rows);
                                           k.layernorm_statistics(stats.data(), at(in, "inp"), N_rows, C);
                                           k.layernorm_forward(out.data(), mean.data(), rstd.data(), at(in, "inp"),
                                                               at(in, "weight"), at(in, "bias"), stats.data(), N_rows,
                                                               C, C)),
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         std::vector<double> out(N_rows * C), mean(N_rows), rstd(N_rows), stats(2 * N_rows);
                         layernorm_statistics<double>(stats.data(), at(in, "inp"), N_rows, C);
                         layernorm_forward<double>(out.data(), mean.data(), rstd.data(), at(in, "inp"),
                                                   at(in, "weight"), at(in, "bias"), stats.data(), N_rows, C, C);
                         layernorm_backward_statistics<double>(stats.data(), dout.data(), at(in, "inp"),
                                                               at(in, "weight"), mean.data(), rstd.data(), N_rows, C);
                         layernorm_backward<double>(at(d, "dinp"), at(d, "dweight"), at(d, "dbias"), dout.data(),
                                                    at(in, "inp"), at(in, "weight"), mean.data(), rstd.data(),
                                                    stats.data(), N_rows, C, C);
                     }});
    // RMSNorm with Llama 3's epsilon.
    cases.push_back({"rmsnorm", {{"inp", N_rows * C, 2.0}, {"weight", C, 1.5}}, N_rows * C, {},
                     AXONN_FORWARD(std::vector<T> rstd(N_rows); std::vector<double> stats(N_rows);
                                   rmsnorm_statistics<T>(stats.data(), at(in, "inp"), N_rows, C);
                                   rmsnorm_forward<T>(out.data(), rstd.data(), at(in, "inp"), at(in, "weight"),
                                                      stats.data(), N_rows, C, C, 1e-5)),
                     AXONN_BACKEND_FORWARD(std::vector<float> rstd(N_rows); std::vector<double> stats(N_rows);
                                           k.rmsnorm_statistics(stats.data(), at(in, "inp"), N_rows, C);
                                           k.rmsnorm_forward(out.data(), rstd.data(), at(in, "inp"), at(in, "weight"),
                                                             stats.data(), N_rows, C, C, 1e-5)),
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         std::vector<double> out(N_rows * C), rstd(N_rows), stats(N_rows);
                         rmsnorm_statistics<double>(stats.data(), at(in, "inp"), N_rows, C);
                         rmsnorm_forward<double>(out.data(), rstd.data(), at(in, "inp"), at(in, "weight"),
                                                 stats.data(), N_rows, C, C, 1e-5);
                         rmsnorm_backward_statistics<double>(stats.data(), dout.data(), at(in, "inp"),
                                                             at(in, "weight"), rstd.data(), N_rows, C);
                         rmsnorm_backward<double>(at(d, "dinp"), at(d, "dweight"), dout.data(), at(in, "inp"),
                                                  at(in, "weight"), rstd.data(), stats.data(), N_rows, C, C);
                     }});
    cases.push_back({"swiglu", {{"inp", N_rows * 2 * 5, 3.0}}, N_rows * 5, {},
                     AXONN_FORWARD(swiglu_forward<T>(out.data(), at(in, "inp"), N_rows, 5)),
                     AXONN_BACKEND_FORWARD(k.swiglu_forward(out.data(), at(in, "inp"), N_rows, 5)),
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         swiglu_backward<double>(at(d, "dinp"), at(in, "inp"), dout.data(), N_rows, 5);
                     }});
    // SwiGLU's backward writes dinp (the decoder's buffer holds nothing else).
    cases.back().overwritten = {"inp"};
    // Rotary embeddings of 2 heads of 4 channels at the start of rows of 11 (the other 3 pass through), from
    // position 3 (a continuation), with Llama 3's rescaled frequencies. The kernel works in place: the case
    // copies its input first, and the backward rotates a copy of dout back and adds it.
    cases.push_back({"rope", {{"x", B * T_ * 11, 2.0}}, B * T_ * 11, {},
                     AXONN_FORWARD(out.assign(in.at("x").begin(), in.at("x").end());
                                   std::vector<double> const inv_freq = rope_inverse_frequencies(4, 10.0, RopeScaling{});
                                   rope_rotate<T>(out.data(), inv_freq.data(), B, T_, 2, 4, 11, 3, +1)),
                     AXONN_BACKEND_FORWARD(out.assign(in.at("x").begin(), in.at("x").end());
                                           std::vector<double> const inv_freq =
                                               rope_inverse_frequencies(4, 10.0, RopeScaling{});
                                           k.rope_rotate(out.data(), inv_freq.data(), B, T_, 2, 4, 11, 3, +1)),
                     [](Buffers<double>&, std::vector<double> const& dout, Buffers<double>& d) {
                         std::vector<double> back = dout;
                         std::vector<double> const inv_freq = rope_inverse_frequencies(4, 10.0, RopeScaling{});
                         rope_rotate<double>(back.data(), inv_freq.data(), B, T_, 2, 4, 11, 3, -1);
                         for (std::size_t i = 0; i < back.size(); ++i) d.at("dx")[i] += back[i];
                     }});
    // A Linear's bias and GELU: the forward adds the bias to its input in place (the case works on a copy), the
    // backward writes the input's gradient and adds the bias's.
    cases.push_back({"bias_gelu", {{"pre", N_rows * 37, 4.0}, {"bias", 37, 1.0}}, N_rows * 37, {"pre"},
                     AXONN_FORWARD(std::vector<T> pre = in.at("pre");
                                   bias_gelu_forward<T>(out.data(), pre.data(), at(in, "bias"), N_rows, 37)),
                     AXONN_BACKEND_FORWARD(std::vector<float> pre = in.at("pre");
                                           k.bias_gelu_forward(out.data(), pre.data(), at(in, "bias"), N_rows, 37,
                                                               nullptr)),
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         std::vector<double> pre = in.at("pre"), out(pre.size());
                         bias_gelu_forward<double>(out.data(), pre.data(), at(in, "bias"), N_rows, 37);
                         gelu_bias_backward<double>(at(d, "dpre"), at(d, "dbias"), pre.data(), dout.data(), N_rows,
                                                    37);
                     }});
    // The residual's backward is no kernel: both inputs' gradient is dout (model/decoder_backward.cpp).
    cases.push_back({"residual", {{"a", 19, 1.0}, {"b", 19, 1.0}}, 19, {},
                     AXONN_FORWARD(residual_forward<T>(out.data(), at(in, "a"), at(in, "b"), 19)),
                     AXONN_BACKEND_FORWARD(k.residual_forward(out.data(), at(in, "a"), at(in, "b"), 19)),
                     [](Buffers<double>&, std::vector<double> const& dout, Buffers<double>& d) {
                         for (std::size_t i = 0; i < dout.size(); ++i) {
                             d.at("da")[i] += dout[i];
                             d.at("db")[i] += dout[i];
                         }
                     }});
    // Fused attention in its default tiles (one tile here) and in tiles of 2 queries × 3 keys, so that the five
    // positions cross tile boundaries, skip the tiles above the diagonal and rescale the online softmax; and
    // grouped-query attention, the three query heads sharing one key/value head, whose gradients must gather all
    // three heads'.
    struct AttentionVariant {
        std::string name;
        AttentionTiles tiles;
        int kv_heads;
    };
    for (AttentionVariant const& variant : {AttentionVariant{"attention", {}, NH},
                                            AttentionVariant{"attention_small_tiles", {2, 3}, NH},
                                            AttentionVariant{"attention_grouped_query", {2, 3}, 1}}) {
        AttentionTiles const tiles = variant.tiles;
        int const NKV = variant.kv_heads;
        int const width = C + 2 * NKV * (C / NH);  // a token's [q | k | v]
        cases.push_back({variant.name, {{"qkv", static_cast<std::size_t>(B * T_ * width), 1.5}}, B * T_ * C, {"qkv"},
                         [tiles, NKV](Buffers<double>& in, std::vector<double>& out) {
                             std::vector<double> lse(B * NH * T_);
                             attention_forward<double>(out.data(), lse.data(), at(in, "qkv"), B, T_, C, NH, NKV,
                                                       tiles);
                         },
                         [NKV](Backend& k, Buffers<float>& in, std::vector<float>& out) {
                             std::vector<float> lse(B * NH * T_);
                             k.attention_forward(out.data(), lse.data(), at(in, "qkv"), B, T_, C, NH, NKV);
                         },
                         [tiles, NKV](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                             std::vector<double> out(B * T_ * C), lse(B * NH * T_);
                             attention_forward<double>(out.data(), lse.data(), at(in, "qkv"), B, T_, C, NH, NKV,
                                                       tiles);
                             attention_backward<double>(at(d, "dqkv"), dout.data(), at(in, "qkv"), out.data(),
                                                        lse.data(), B, T_, C, NH, NKV, tiles);
                         },
                         // so short a sequence runs in fp32 in mixed precision too (test_attention.cpp)
                         attention_in_bf16(T_) ? gemm_bf16_tolerance : 1e-5});
    }
    cases.push_back({"cross_entropy", {{"logits", N_rows * Vp, 3.0}}, N_rows, {"logits"},
                     AXONN_FORWARD(std::vector<T> lse(N_rows), row_max(N_rows); std::vector<double> sums(2 * N_rows);
                                   cross_entropy_max<T>(row_max.data(), at(in, "logits"), N_rows, V, Vp);
                                   cross_entropy_sums<T>(sums.data(), at(in, "logits"), row_max.data(),
                                                         ce_targets.data(), N_rows, V, Vp, 0);
                                   cross_entropy_losses<T>(out.data(), lse.data(), row_max.data(), sums.data(),
                                                           ce_targets.data(), N_rows)),
                     AXONN_BACKEND_FORWARD(std::vector<float> lse(N_rows), row_max(N_rows);
                                           std::vector<double> sums(2 * N_rows);
                                           k.cross_entropy_max(row_max.data(), at(in, "logits"), N_rows, V, Vp);
                                           k.cross_entropy_sums(sums.data(), at(in, "logits"), row_max.data(),
                                                                ce_targets.data(), N_rows, V, Vp, 0);
                                           k.cross_entropy_losses(out.data(), lse.data(), row_max.data(), sums.data(),
                                                                  ce_targets.data(), N_rows)),
                     [](Buffers<double>& in, std::vector<double> const& dout, Buffers<double>& d) {
                         std::vector<double> losses(N_rows), lse(N_rows), row_max(N_rows), sums(2 * N_rows);
                         cross_entropy_max<double>(row_max.data(), at(in, "logits"), N_rows, V, Vp);
                         cross_entropy_sums<double>(sums.data(), at(in, "logits"), row_max.data(), ce_targets.data(),
                                                    N_rows, V, Vp, 0);
                         cross_entropy_losses<double>(losses.data(), lse.data(), row_max.data(), sums.data(),
                                                      ce_targets.data(), N_rows);
                         cross_entropy_backward<double>(at(d, "dlogits"), at(in, "logits"), lse.data(),
                                                        ce_targets.data(), dout.data(), N_rows, V, Vp, 0);
                     }});
    return cases;
}

std::vector<double> uniform(std::size_t size, double scale, std::uint64_t stream) {
    std::vector<double> values(size);
    for (std::size_t i = 0; i < size; ++i) values[i] = scale * (2.0 * uniform_open01({7, stream}, i) - 1.0);
    return values;
}

double weighted_sum(std::vector<double> const& out, std::vector<double> const& weights) {
    double sum = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += out[i] * weights[i];
    return sum;
}

double relative_norm_difference(std::vector<double> const& actual, std::vector<double> const& expected) {
    double difference = 0.0, reference = 0.0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
        difference += (actual[i] - expected[i]) * (actual[i] - expected[i]);
        reference += expected[i] * expected[i];
    }
    return std::sqrt(difference / std::max(reference, 1e-300));
}

class KernelGradient : public ::testing::TestWithParam<KernelCase> {};

TEST_P(KernelGradient, BackwardMatchesFiniteDifferences) {
    KernelCase const& kernel = GetParam();
    Buffers<double> inputs;
    std::uint64_t stream = 1;
    for (auto const& spec : kernel.inputs) inputs[spec.name] = uniform(spec.size, spec.scale, stream++);
    std::vector<double> const dout = uniform(kernel.output_size, 1.0, 100);

    // Analytic: start every gradient from a nonzero value to check that backward accumulates.
    Buffers<double> grads, before;
    for (auto const& spec : kernel.inputs) {
        // An overwritten gradient also starts from garbage: none of it may survive the backward.
        before["d" + spec.name] = uniform(spec.size, 0.5, 200 + stream++);
    }
    grads = before;
    kernel.backward(inputs, dout, grads);

    std::vector<double> out(kernel.output_size);
    constexpr double eps = 1e-6;
    for (auto const& spec : kernel.inputs) {
        std::vector<double>& x = inputs[spec.name];
        std::vector<double> numeric(spec.size), analytic(spec.size);
        for (std::size_t i = 0; i < spec.size; ++i) {
            double const saved = x[i];
            x[i] = saved + eps;
            kernel.forward_double(inputs, out);
            double const plus = weighted_sum(out, dout);
            x[i] = saved - eps;
            kernel.forward_double(inputs, out);
            double const minus = weighted_sum(out, dout);
            x[i] = saved;
            numeric[i] = (plus - minus) / (2 * eps);
            bool const overwritten = std::find(kernel.overwritten.begin(), kernel.overwritten.end(), spec.name) !=
                                     kernel.overwritten.end();
            analytic[i] = grads["d" + spec.name][i] - (overwritten ? 0.0 : before["d" + spec.name][i]);
        }
        double const error = relative_norm_difference(analytic, numeric);
        EXPECT_LT(error, 1e-7) << kernel.name << ": d" << spec.name << " differs from finite differences";
    }
}

// The case's forward through a backend of `precision` on the fp32-rounded inputs, against the double forward:
// the relative difference, norm-wise.
double backend_forward_error(KernelCase const& kernel, DType precision) {
    Buffers<double> inputs;
    Buffers<float> inputs_float;
    std::uint64_t stream = 1;
    for (auto const& spec : kernel.inputs) {
        inputs[spec.name] = uniform(spec.size, spec.scale, stream++);
        inputs_float[spec.name].assign(inputs[spec.name].begin(), inputs[spec.name].end());
        // The double forward reads the rounded inputs, so only the kernel's arithmetic differs.
        inputs[spec.name].assign(inputs_float[spec.name].begin(), inputs_float[spec.name].end());
    }
    std::vector<double> out(kernel.output_size);
    std::vector<float> out_float(kernel.output_size);
    kernel.forward_double(inputs, out);
    std::unique_ptr<Backend> const backend = make_backend("cpu", precision);
    kernel.forward_backend(*backend, inputs_float, out_float);
    return relative_norm_difference(std::vector<double>(out_float.begin(), out_float.end()), out);
}

TEST_P(KernelGradient, Fp32BackendForwardMatchesDouble) {
    EXPECT_LT(backend_forward_error(GetParam(), DType::f32), 1e-5) << GetParam().name;
}

TEST_P(KernelGradient, Bf16BackendForwardMatchesDouble) {
    KernelCase const& kernel = GetParam();
    double const error = backend_forward_error(kernel, DType::bf16);
    EXPECT_LT(error, kernel.bf16_tolerance) << kernel.name;
    // A GEMM case that matched to fp32 accuracy would not have run in bf16 at all.
    if (kernel.bf16_tolerance > 1e-5) {
        EXPECT_GT(error, 1e-5) << kernel.name << " did not round to bf16";
    }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KernelGradient, ::testing::ValuesIn(kernel_cases()),
                         [](auto const& info) { return info.param.name; });

}  // namespace
}  // namespace axonn::cpu
