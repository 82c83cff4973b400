// Every Backend operation on the GPU against the CPU backend, through the interface, as the model calls it: one
// table, one case per operation or chain of operations (a forward and the backward that reads what it saved), in
// the manner of ggml's test-backend-ops. Each case names its buffers; both backends start from the same random
// contents (outputs too, so that "accumulates" and "writes" are both checked), run the case, and every buffer the
// case names as an output must agree norm-wise: ‖gpu − cpu‖ / ‖cpu‖.
//
// Tolerances. fp32: 1e-5. The two backends differ only in summation order and in their exp/tanh (the CPU's
// vectorised approximations, accurate to a few ulp), a few 1e-7 relative on these sizes. bf16: both backends
// round the GEMM operands to bf16 the same way (to nearest, ties to even) and accumulate in fp32, so the GEMM
// cases stay within 1e-5 too; but attention rounds differently (the GPU's tensor-core kernels round each tile of
// probabilities once and sum in another order, its plain kernel computes in fp32), and the ops downstream of a
// bf16 GEMM inherit its rounding where the CPU reference itself runs fp32 (a host without bf16): those cases
// state 1e-2 (one bf16 rounding is 2⁻⁹ relative; norm-wise over random signs, a few 1e-3).
//
// Skipped, and counted as skipped, where no CUDA GPU is visible.
#include "axonn/core/rng.h"
#include "axonn/kernels/backend.h"
#include "axonn/kernels/cuda/cuda_backend.h"
#include "axonn/core/cuda/cuda_check.h"
#include "axonn/kernels/cuda/gpu_choice.h"
#include "axonn/kernels/rope_frequencies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace axonn {
namespace {

struct BufferSpec {
    std::string name;
    DType dtype;
    std::int64_t size;
    double scale = 1.0;                // floats drawn uniformly from (−scale, scale), or [0, scale) if non_negative
    bool non_negative = false;
    std::vector<std::int32_t> values;  // int32 buffers: these contents
};

// The buffers of one run, by name: host memory for the CPU backend, GPU memory for the CUDA one.
struct Pointers {
    std::map<std::string, void*> by_name;
    float* f(std::string const& name) const { return static_cast<float*>(by_name.at(name)); }
    double* d(std::string const& name) const { return static_cast<double*>(by_name.at(name)); }
    std::int32_t* i(std::string const& name) const { return static_cast<std::int32_t*>(by_name.at(name)); }
    void* raw(std::string const& name) const { return by_name.at(name); }
};

struct GpuCase {
    std::string name;
    std::vector<BufferSpec> buffers;
    std::vector<std::string> outputs;
    // Runs the case; a number an operation returns (sum_of_squares) goes into `scalars`.
    std::function<void(Backend&, Pointers const&, std::vector<double>& scalars)> run;
    // In bf16 this case's results differ by bf16 roundings: the GPU computes in fp32 where the CPU rounds to bf16
    // (attention's tile GEMMs), or both round values that differ in their last bits (the cross-entropy's and GELU's
    // input gradients, which bf16 GEMMs read as their roundings alone): in bf16 it is held to the rounding tolerance.
    bool bf16_rounding_differs = false;
    // It writes bf16 outputs from fp32 values the two backends compute alike but for the last bits, so a value
    // near a rounding boundary may round apart (2⁻⁸ of it): held to the rounding tolerance in either precision.
    bool writes_bf16 = false;

    friend void PrintTo(GpuCase const& gpu_case, std::ostream* out) { *out << gpu_case.name; }
};
constexpr double fp32_tolerance = 1e-5;

// An operand a backward returns for its Linear's GEMMs (Backend::gemm_input's), in `out` as fp32 to compare: with
// bf16 GEMMs its rounding alone, widened; with fp32 GEMMs the values are in `out` already.
void widen_operand_into(Backend& k, float* out, GemmInput operand, std::int64_t n) {
    if (operand.rounded != nullptr) k.convert(out, DType::f32, operand.rounded, DType::bf16, n);
}
constexpr double bf16_rounding_tolerance = 1e-2;

// A GEMM's weight as the backend takes it: the fp32 buffer, or its bf16 copy made by the backend's convert into
// the case's buffer `rounded`.
WeightView gemm_weight(Backend& k, Pointers const& p, std::string const& fp32, std::string const& rounded,
                       std::int64_t n) {
    if (k.gemm_dtype() == DType::f32) return {p.f(fp32), DType::f32};
    k.convert(p.raw(rounded), DType::bf16, p.f(fp32), DType::f32, n);
    return {p.raw(rounded), DType::bf16};
}

BufferSpec floats(std::string name, std::int64_t size, double scale = 1.0) {
    return {std::move(name), DType::f32, size, scale, false, {}};
}
// AdamW's second moments: a square's running mean is never negative.
BufferSpec non_negative_floats(std::string name, std::int64_t size, double scale) {
    return {std::move(name), DType::f32, size, scale, true, {}};
}
BufferSpec doubles(std::string name, std::int64_t size) { return {std::move(name), DType::f64, size, 1.0, false, {}}; }
BufferSpec halves(std::string name, std::int64_t size) { return {std::move(name), DType::bf16, size, 1.0, false, {}}; }
BufferSpec ints(std::string name, std::vector<std::int32_t> values) {
    auto const size = static_cast<std::int64_t>(values.size());
    return {std::move(name), DType::i32, size, 1.0, false, std::move(values)};
}

// Token ids in [0, V) with repeats, so that embedding rows gather several tokens' gradients.
std::vector<std::int32_t> token_ids(std::int64_t n, int V) {
    std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3) % V);
    return ids;
}

std::vector<GpuCase> gpu_cases() {
    std::vector<GpuCase> cases;
    cases.push_back({"convert_bf16_round_trip", {floats("x", 1001, 3.0), halves("x16", 1001), floats("back", 1001)},
                     {"x16", "back"},
                     [](Backend& k, Pointers const& p, std::vector<double>&) {
                         k.convert(p.raw("x16"), DType::bf16, p.f("x"), DType::f32, 1001);
                         k.convert(p.f("back"), DType::f32, p.raw("x16"), DType::bf16, 1001);
                     }});
    // Linear layers: odd sizes, and one large enough for cuBLASLt's tiled kernels.
    struct LinearShape { char const* name; std::int64_t M, K, N; };
    for (LinearShape const s : {LinearShape{"linear_5x7x6", 5, 7, 6}, LinearShape{"linear_300x200x500", 300, 200, 500}}) {
        std::int64_t const M = s.M, K = s.K, N = s.N;
        std::vector<BufferSpec> const buffers = {floats("inp", M * K), floats("weight", N * K), halves("weight16", N * K),
                                                 floats("bias", N), floats("out", M * N), floats("dout", M * N),
                                                 floats("dinp", M * K), floats("dweight", N * K), floats("dbias", N),
                                                 floats("dweight_written", N * K), floats("dinp_held", M * K)};
        cases.push_back({std::string(s.name), buffers,
                         {"out", "dinp", "dweight", "dbias", "dweight_written", "dinp_held"},
                         [M, K, N](Backend& k, Pointers const& p, std::vector<double>&) {
                             WeightView const w = gemm_weight(k, p, "weight", "weight16", N * K);
                             k.linear_forward(p.f("out"), p.f("inp"), w, p.f("bias"), M, K, N);
                             // dout rounded where each GEMM runs, and (the model's way) once for both
                             GemmInput const dout = GemmInput::unrounded(p.f("dout"));
                             k.linear_backward_input(p.f("dinp"), dout, w, M, K, N);
                             k.linear_backward_weight(p.f("dweight"), p.f("dbias"), dout, p.f("inp"), M, K, N,
                                                      GradWrite::accumulate);
                             GemmInput const held = k.gemm_input(p.f("dout"), M * N);
                             k.linear_backward_input(p.f("dinp_held"), held, w, M, K, N);
                             k.linear_backward_weight(p.f("dweight_written"), nullptr, held, p.f("inp"), M, K,
                                                      N, GradWrite::overwrite);
                         }});
    }
    // With tuning on, a shape's first call times cuBLASLt's proposals (and oneDNN's variants on the CPU): the
    // product must not change. An operand 64 bytes into its buffer is aligned less than cuBLASLt assumes.
    {
        constexpr std::int64_t M = 96, K = 130, N = 200, offset = 16;  // 16 floats = 64 bytes
        cases.push_back({"linear_tuned_unaligned",
                         {floats("inp", offset + M * K), floats("weight", N * K), halves("weight16", N * K),
                          floats("out", offset + M * N)},
                         {"out"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             WeightView const w = gemm_weight(k, p, "weight", "weight16", N * K);
                             k.set_gemm_tuning(true);
                             k.linear_forward(p.f("out") + offset, p.f("inp") + offset, w, nullptr, M, K, N);
                             k.linear_forward(p.f("out") + offset, p.f("inp") + offset, w, nullptr, M, K, N);
                             k.set_gemm_tuning(false);
                         }});
    }
    {
        constexpr int B = 2, T = 5, C = 12, V = 9, rows = 4, begin = 3, maxT = 6;  // a slice: ids 3 ... 6
        cases.push_back({"encoder_vocab_slice",
                         {floats("wte", rows * C), halves("wte16", rows * C), floats("wpe", maxT * C),
                          ints("tokens", token_ids(B * T, V)), floats("out", B * T * C), floats("dout", B * T * C),
                          floats("dwte", rows * C), floats("dwpe", maxT * C)},
                         {"out", "dwte", "dwpe"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             WeightView const wte = gemm_weight(k, p, "wte", "wte16", rows * C);
                             k.encoder_forward(p.f("out"), p.i("tokens"), wte, p.f("wpe"), B, T, C, begin, rows);
                             k.encoder_backward(p.f("dwte"), p.f("dwpe"), p.f("dout"), p.i("tokens"), B, T, C, begin,
                                                rows);
                         }});
    }
    {
        constexpr std::int64_t N = 37;
        constexpr int C = 300, C_total = 900;  // a third of the channels, as on a rank of X = 3
        cases.push_back({"layernorm",
                         {floats("inp", N * C, 2.0), floats("weight", C), floats("bias", C), doubles("stats", 2 * N),
                          floats("out", N * C), floats("mean", N), floats("rstd", N), floats("dout", N * C),
                          doubles("dstats", 2 * N), floats("dinp", N * C), floats("dweight", C), floats("dbias", C)},
                         {"stats", "out", "mean", "rstd", "dstats", "dinp", "dweight", "dbias"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.layernorm_statistics(p.d("stats"), p.f("inp"), N, C);
                             k.layernorm_forward(p.f("out"), p.f("mean"), p.f("rstd"), p.f("inp"), p.f("weight"),
                                                 p.f("bias"), p.d("stats"), N, C, C_total);
                             k.layernorm_backward_statistics(p.d("dstats"), p.f("dout"), p.f("inp"), p.f("weight"),
                                                             p.f("mean"), p.f("rstd"), N, C);
                             k.layernorm_backward(p.f("dinp"), p.f("dweight"), p.f("dbias"), p.f("dout"), p.f("inp"),
                                                  p.f("weight"), p.f("mean"), p.f("rstd"), p.d("dstats"), N, C, C_total);
                         }});
        // The residual add fused with either norm's statistics: the sum over one of the inputs, as the decoder
        // writes it.
        for (bool const layernorm : {true, false}) {
            std::int64_t const stats = layernorm ? 2 * N : N;
            cases.push_back({layernorm ? "residual_layernorm_statistics" : "residual_rmsnorm_statistics",
                             {floats("a", N * C, 2.0), floats("sum", N * C, 2.0), doubles("stats", stats)},
                             {"sum", "stats"},
                             [layernorm](Backend& k, Pointers const& p, std::vector<double>&) {
                                 k.residual_norm_statistics(p.f("sum"), p.f("a"), p.f("sum"), p.d("stats"), N, C,
                                                            layernorm);
                             }});
        }
        cases.push_back({"rmsnorm",
                         {floats("inp", N * C, 2.0), floats("weight", C), doubles("stats", N), floats("out", N * C),
                          floats("rstd", N), floats("dout", N * C), doubles("dstats", N), floats("dinp", N * C),
                          floats("dweight", C)},
                         {"stats", "out", "rstd", "dstats", "dinp", "dweight"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.rmsnorm_statistics(p.d("stats"), p.f("inp"), N, C);
                             k.rmsnorm_forward(p.f("out"), p.f("rstd"), p.f("inp"), p.f("weight"), p.d("stats"), N, C,
                                               C_total, 1e-5);
                             k.rmsnorm_backward_statistics(p.d("dstats"), p.f("dout"), p.f("inp"), p.f("weight"),
                                                           p.f("rstd"), N, C);
                             k.rmsnorm_backward(p.f("dinp"), p.f("dweight"), p.f("dout"), p.f("inp"), p.f("weight"),
                                                p.f("rstd"), p.d("dstats"), N, C, C_total);
                         }});
    }
    {
        constexpr std::int64_t n = 4099;  // not a multiple of any block
        cases.push_back({"residual", {floats("a", n), floats("b", n), floats("out", n)},
                         {"out"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.residual_forward(p.f("out"), p.f("a"), p.f("b"), n);
                         }});
        // 7 rows of 3 column blocks of 5: split, then joined back into another buffer.
        cases.push_back({"column_blocks", {floats("whole", 7 * 15), floats("blocks", 7 * 15), floats("joined", 7 * 15)},
                         {"blocks", "joined"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.split_columns(p.f("blocks"), p.f("whole"), 7, 3, 5);
                             k.join_columns(p.f("joined"), p.f("blocks"), 7, 3, 5);
                         }});
        cases.push_back({"sum_of_squares", {floats("x", n)}, {},
                         [](Backend& k, Pointers const& p, std::vector<double>& scalars) {
                             scalars.push_back(k.sum_of_squares(p.f("x"), n));
                         }});
    }
    {
        constexpr std::int64_t N = 13;
        constexpr int F = 77;
        // In bf16 the backward reads [gate | up] as mixed precision keeps it, its bf16 rounding alone.
        cases.push_back({"swiglu", {floats("inp", N * 2 * F, 3.0), floats("out", N * F), floats("dout", N * F),
                                    floats("dinp", N * 2 * F), halves("inp16", N * 2 * F)},
                         {"out", "dinp"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.swiglu_forward(p.f("out"), p.f("inp"), N, F);
                             HeldInput inp(p.f("inp"));
                             if (k.gemm_dtype() == DType::bf16) {
                                 auto* const inp16 = static_cast<bfloat16*>(p.raw("inp16"));
                                 k.convert(inp16, DType::bf16, p.f("inp"), DType::f32, N * 2 * F);
                                 inp = HeldInput(inp16);
                             }
                             k.swiglu_backward(p.f("dinp"), inp, p.f("dout"), N, F);
                         }});
        // A Linear's bias and GELU in one pass each way: more rows than a column sum's chunk (64), and without a
        // bias too. pre is rewritten in place (compared), dpre written, dbias added to. In bf16 the backward reads
        // pre as mixed precision keeps it, its bf16 rounding alone, and returns dpre as its rounding.
        constexpr std::int64_t rows = 150;
        for (bool const with_bias : {true, false}) {
            cases.push_back({with_bias ? "bias_gelu" : "gelu_without_bias",
                             {floats("pre", rows * F, 4.0), floats("bias", F), floats("out", rows * F),
                              floats("dout", rows * F), floats("dpre", rows * F), floats("dbias", F),
                              halves("pre16", rows * F)},
                             {"pre", "out", "dpre", "dbias"},
                             [with_bias](Backend& k, Pointers const& p, std::vector<double>&) {
                                 float* const bias = with_bias ? p.f("bias") : nullptr;
                                 float* const dbias = with_bias ? p.f("dbias") : nullptr;
                                 k.bias_gelu_forward(p.f("out"), p.f("pre"), bias, rows, F, nullptr);
                                 HeldInput pre(p.f("pre"));
                                 if (k.gemm_dtype() == DType::bf16) {
                                     auto* const pre16 = static_cast<bfloat16*>(p.raw("pre16"));
                                     k.convert(pre16, DType::bf16, p.f("pre"), DType::f32, rows * F);
                                     pre = HeldInput(pre16);
                                 }
                                 widen_operand_into(k, p.f("dpre"),
                                                    k.gelu_bias_backward(p.f("dpre"), dbias, pre, p.f("dout"), rows, F),
                                                    rows * F);
                             },
                             true});
        }
        // The input gradient written over the output gradient, as the decoder does.
        cases.push_back({"gelu_backward_in_place",
                         {floats("pre", rows * F, 4.0), floats("gradient", rows * F), floats("dbias", F)},
                         {"gradient", "dbias"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             widen_operand_into(k, p.f("gradient"),
                                                k.gelu_bias_backward(p.f("gradient"), p.f("dbias"), p.f("pre"),
                                                                     p.f("gradient"), rows, F),
                                                rows * F);
                         },
                         true});
    }
    {
        // The kernels whose outputs only GEMMs read, writing bf16 as mixed precision holds those activations (and
        // GELU's pass keeping its input as its rounding); in bf16, the GEMMs then read such an input with no fp32
        // copy beside it (forward and weight gradient).
        constexpr std::int64_t N = 37;
        constexpr int C = 300, F = 77;
        cases.push_back({"outputs_in_bf16",
                         {floats("inp", N * C, 2.0), floats("weight", C), floats("bias", C), doubles("stats", 2 * N),
                          doubles("rms_stats", N), floats("mean", N), floats("rstd", N), halves("norm16", N * C),
                          halves("rms16", N * C), floats("pre", N * 2 * F, 4.0), floats("gelu_bias", 2 * F),
                          halves("gelu16", N * 2 * F), halves("pre16", N * 2 * F), halves("swiglu16", N * F),
                          floats("w", F * C),
                          halves("w16", F * C), floats("out", N * F), floats("dout", N * F),
                          floats("dweight", F * C)},
                         {"norm16", "rms16", "swiglu16", "pre", "gelu16", "pre16", "out", "dweight"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             auto* const norm16 = static_cast<bfloat16*>(p.raw("norm16"));
                             k.layernorm_statistics(p.d("stats"), p.f("inp"), N, C);
                             k.layernorm_forward(norm16, p.f("mean"), p.f("rstd"), p.f("inp"), p.f("weight"),
                                                 p.f("bias"), p.d("stats"), N, C, C);
                             k.rmsnorm_statistics(p.d("rms_stats"), p.f("inp"), N, C);
                             k.rmsnorm_forward(static_cast<bfloat16*>(p.raw("rms16")), p.f("rstd"), p.f("inp"),
                                               p.f("weight"), p.d("rms_stats"), N, C, C, 1e-5);
                             k.swiglu_forward(static_cast<bfloat16*>(p.raw("swiglu16")), p.f("pre"), N, F);
                             // pre + bias kept as its rounding alone, as mixed precision keeps it (pre left as is)
                             k.bias_gelu_forward(static_cast<bfloat16*>(p.raw("gelu16")), p.f("pre"),
                                                 p.f("gelu_bias"), N, 2 * F, static_cast<bfloat16*>(p.raw("pre16")));
                             if (k.gemm_dtype() != DType::bf16) return;  // only bf16 GEMMs read a bf16-only input
                             WeightView const w = gemm_weight(k, p, "w", "w16", F * C);
                             GemmInput const norm(nullptr, norm16);
                             k.linear_forward(p.f("out"), norm, w, nullptr, N, C, F);
                             k.linear_backward_weight(p.f("dweight"), nullptr, GemmInput::unrounded(p.f("dout")), norm,
                                                      N, C, F, GradWrite::overwrite);
                         },
                         false, true});
    }
    {
        // Query and key heads of 64 channels in rows of stride 400, Llama 3's scaled frequencies, from position 5;
        // then rotated back (the gradient's direction).
        constexpr int B = 2, T = 9, heads = 3, hs = 64;
        constexpr std::int64_t stride = 400;
        cases.push_back({"rope", {floats("x", B * T * stride, 2.0), floats("back", B * T * stride, 2.0)}, {"x", "back"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             std::vector<double> const inv_freq = rope_inverse_frequencies(hs, 500000.0, RopeScaling{});
                             k.rope_rotate(p.f("x"), inv_freq.data(), B, T, heads, hs, stride, 5, +1);
                             k.rope_rotate(p.f("back"), inv_freq.data(), B, T, heads, hs, stride, 5, -1);
                         }});
    }
    // Attention: GPT-2's heads (NKV = NH) and grouped queries; a small head and Llama's 128 channels.
    struct AttentionShape { char const* name; int B, T, C, NH, NKV; };
    // In bf16, heads of 64 and 128 channels run on the tensor cores, in tiles of 64 rows: 100, 70 and 200 tokens
    // end in partial tiles, and 200 crosses several.
    for (AttentionShape const s : {AttentionShape{"attention_tiny_heads", 2, 5, 12, 3, 3},
                                   AttentionShape{"attention_gpt2_heads", 2, 100, 256, 4, 4},
                                   AttentionShape{"attention_grouped_query", 1, 70, 512, 4, 2},
                                   AttentionShape{"attention_long_grouped", 1, 200, 128, 2, 1}}) {
        int const B = s.B, T = s.T, C = s.C, NH = s.NH, NKV = s.NKV;
        std::int64_t const W = C + 2 * static_cast<std::int64_t>(NKV) * (C / NH);
        std::int64_t const BT = static_cast<std::int64_t>(B) * T;
        cases.push_back({std::string(s.name),
                         {floats("qkv", BT * W, 2.0), floats("out", BT * C), floats("lse", B * NH * T),
                          floats("dout", BT * C), floats("dqkv", BT * W)},
                         {"out", "lse", "dqkv"},
                         [=](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.attention_forward(p.f("out"), p.f("lse"), p.f("qkv"), B, T, C, NH, NKV);
                             k.attention_backward(p.f("dqkv"), p.f("dout"), p.f("qkv"), p.f("out"), p.f("lse"), B, T,
                                                  C, NH, NKV);
                         },
                         true});
    }
    {
        // In bf16, qkv held only in bf16 (as the decoder keeps it where attention runs in bf16: 200 tokens are
        // more than one of the CPU's bf16 query tiles), forward and backward.
        constexpr int B = 1, T = 200, C = 128, NH = 2, NKV = 1;
        constexpr std::int64_t W = C + 2 * NKV * (C / NH), BT = B * T;
        cases.push_back({"attention_qkv_held_in_bf16",
                         {floats("qkv", BT * W, 2.0), halves("qkv16", BT * W), floats("out", BT * C),
                          floats("lse", B * NH * T), floats("dout", BT * C), floats("dqkv", BT * W)},
                         {"out", "lse", "dqkv"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             if (k.gemm_dtype() != DType::bf16) return;  // only bf16 attention reads a bf16-only qkv
                             k.convert(p.raw("qkv16"), DType::bf16, p.f("qkv"), DType::f32, BT * W);
                             GemmInput const qkv(nullptr, static_cast<bfloat16 const*>(p.raw("qkv16")));
                             k.attention_forward(p.f("out"), p.f("lse"), qkv, B, T, C, NH, NKV);
                             k.attention_backward(p.f("dqkv"), p.f("dout"), qkv, p.f("out"), p.f("lse"), B, T, C, NH,
                                                  NKV);
                         },
                         true});
    }
    {
        // Generation: a prompt of 6 tokens into an empty cache, then 3 more tokens over it.
        constexpr int B = 2, C = 256, NH = 4, NKV = 2, capacity = 16, prompt = 6, more = 3;
        constexpr std::int64_t W = C + 2 * NKV * (C / NH);
        std::int64_t const cache = static_cast<std::int64_t>(B) * NKV * capacity * (C / NH);
        cases.push_back({"attention_cached",
                         {floats("prompt_qkv", B * prompt * W, 2.0), floats("more_qkv", B * more * W, 2.0),
                          floats("k_cache", cache), floats("v_cache", cache), floats("prompt_out", B * prompt * C),
                          floats("lse", B * NH * prompt), floats("more_out", B * more * C)},
                         {"prompt_out", "lse", "more_out"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.attention_cached(p.f("prompt_out"), p.f("lse"), p.f("k_cache"), p.f("v_cache"),
                                                p.f("prompt_qkv"), B, prompt, 0, capacity, C, NH, NKV);
                             k.attention_cached(p.f("more_out"), p.f("lse"), p.f("k_cache"), p.f("v_cache"),
                                                p.f("more_qkv"), B, more, prompt, capacity, C, NH, NKV);
                         },
                         true});
    }
    {
        // A vocabulary slice (ids 100 ... of 250 columns, 230 real) with an ignored target and targets outside it.
        // The gradient as the head's GEMMs read it: in bf16 its rounding alone, widened here to compare.
        constexpr std::int64_t N = 6;
        constexpr int Vp_local = 250, valid = 230, begin = 100;
        std::vector<std::int32_t> const targets = {105, -1, 329, 7, 100, 400};
        cases.push_back({"cross_entropy_vocab_slice",
                         {floats("logits", N * Vp_local, 5.0), ints("targets", targets), floats("row_max", N),
                          doubles("sums", 2 * N), floats("losses", N), floats("lse", N), floats("dlosses", N),
                          floats("dlogits", N * Vp_local), floats("in_place", N * Vp_local)},
                         {"row_max", "sums", "losses", "lse", "dlogits", "in_place"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.cross_entropy_max(p.f("row_max"), p.f("logits"), N, valid, Vp_local);
                             k.cross_entropy_sums(p.d("sums"), p.f("logits"), p.f("row_max"), p.i("targets"), N, valid,
                                                  Vp_local, begin);
                             k.cross_entropy_losses(p.f("losses"), p.f("lse"), p.f("row_max"), p.d("sums"),
                                                    p.i("targets"), N);
                             widen_operand_into(k, p.f("dlogits"),
                                                k.cross_entropy_backward(p.f("dlogits"), p.f("logits"), p.f("lse"),
                                                                         p.i("targets"), p.f("dlosses"), N, valid,
                                                                         Vp_local, begin),
                                                N * Vp_local);
                             // dlogits may be the logits' own buffer, as the model calls it
                             k.convert(p.f("in_place"), DType::f32, p.f("logits"), DType::f32, N * Vp_local);
                             widen_operand_into(k, p.f("in_place"),
                                                k.cross_entropy_backward(p.f("in_place"), p.f("in_place"), p.f("lse"),
                                                                         p.i("targets"), p.f("dlosses"), N, valid,
                                                                         Vp_local, begin),
                                                N * Vp_local);
                         },
                         true});
        // The two phases at once (the whole vocabulary on one process).
        cases.push_back({"cross_entropy_max_and_sums",
                         {floats("logits", N * Vp_local, 5.0), ints("targets", targets), floats("row_max", N),
                          doubles("sums", 2 * N)},
                         {"row_max", "sums"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             k.cross_entropy_max_and_sums(p.f("row_max"), p.d("sums"), p.f("logits"), p.i("targets"),
                                                          N, valid, Vp_local, begin);
                         },
                         true});
        // Everything at once, the whole vocabulary here (ids 0 ...): the gradient as the head's GEMMs read it, over
        // the logits in fp32 as the model calls it.
        std::vector<std::int32_t> const whole_targets = {5, -1, 229, 7, 0, 100};
        cases.push_back({"cross_entropy_forward_backward",
                         {floats("logits", N * Vp_local, 5.0), ints("targets", whole_targets), floats("losses", N),
                          floats("lse", N), floats("dlosses", N)},
                         {"losses", "lse", "logits"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             widen_operand_into(k, p.f("logits"),
                                                k.cross_entropy_forward_backward(
                                                    p.f("losses"), p.f("lse"), p.f("logits"), p.f("logits"),
                                                    p.i("targets"), p.f("dlosses"), N, valid, Vp_local),
                                                N * Vp_local);
                         },
                         true});
    }
    {
        constexpr std::int64_t n = 5003;
        cases.push_back({"adamw",
                         {floats("param", n), floats("grad", n), floats("m", n, 0.1), non_negative_floats("v", n, 0.01),
                          halves("param16", n)},
                         {"param", "m", "v", "param16"},
                         [](Backend& k, Pointers const& p, std::vector<double>&) {
                             AdamWStep const step{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 7};
                             k.adamw_update(p.f("param"), p.f("grad"), p.f("m"), p.f("v"), n, step,
                                            static_cast<bfloat16*>(p.raw("param16")));
                         }});
    }
    return cases;
}

// One buffer's starting contents, the same for both backends.
std::vector<std::byte> initial_contents(BufferSpec const& spec, std::uint64_t stream) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(spec.size) * dtype_size(spec.dtype));
    PhiloxKey const key{2026, stream};
    for (std::int64_t i = 0; i < spec.size; ++i) {
        double const draw = uniform_open01(key, static_cast<std::uint64_t>(i));
        double const u = spec.scale * (spec.non_negative ? draw : 2.0 * draw - 1.0);
        std::byte* at = bytes.data() + static_cast<std::size_t>(i) * dtype_size(spec.dtype);
        switch (spec.dtype) {
            case DType::f32: { float const f = static_cast<float>(u); std::memcpy(at, &f, sizeof f); break; }
            case DType::f64: std::memcpy(at, &u, sizeof u); break;
            case DType::bf16: { bfloat16 const h = to_bfloat16(static_cast<float>(u)); std::memcpy(at, &h, sizeof h); break; }
            case DType::i32: std::memcpy(at, &spec.values[static_cast<std::size_t>(i)], sizeof(std::int32_t)); break;
            case DType::f16: ADD_FAILURE() << "no kernel's buffer is f16 (only Hugging Face weights are)"; break;
        }
    }
    return bytes;
}

// The buffer's values as doubles, for comparing.
std::vector<double> as_doubles(std::vector<std::byte> const& bytes, DType dtype) {
    std::size_t const n = bytes.size() / dtype_size(dtype);
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::byte const* at = bytes.data() + i * dtype_size(dtype);
        switch (dtype) {
            case DType::f32: { float f; std::memcpy(&f, at, sizeof f); values[i] = f; break; }
            case DType::f64: std::memcpy(&values[i], at, sizeof(double)); break;
            case DType::bf16: { bfloat16 h; std::memcpy(&h, at, sizeof h); values[i] = to_float(h); break; }
            case DType::i32: { std::int32_t v; std::memcpy(&v, at, sizeof v); values[i] = v; break; }
            case DType::f16: ADD_FAILURE() << "no kernel's buffer is f16 (only Hugging Face weights are)"; break;
        }
    }
    return values;
}

double relative_difference(std::vector<double> const& got, std::vector<double> const& expected) {
    double difference = 0, norm = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        difference += (got[i] - expected[i]) * (got[i] - expected[i]);
        norm += expected[i] * expected[i];
    }
    return std::sqrt(difference / std::max(norm, 1e-300));
}

struct RunResult {
    std::map<std::string, std::vector<std::byte>> buffers;
    std::vector<double> scalars;
};

RunResult run_on_cpu(Backend& cpu, GpuCase const& gpu_case) {
    RunResult result;
    Pointers pointers;
    std::uint64_t stream = 0;
    for (BufferSpec const& spec : gpu_case.buffers) {
        result.buffers[spec.name] = initial_contents(spec, stream++);
        pointers.by_name[spec.name] = result.buffers[spec.name].data();
    }
    gpu_case.run(cpu, pointers, result.scalars);
    return result;
}

RunResult run_on_gpu(CudaBackend& gpu, GpuCase const& gpu_case) {
    RunResult result;
    Pointers pointers;
    std::map<std::string, Tensor> device;
    std::uint64_t stream = 0;
    for (BufferSpec const& spec : gpu_case.buffers) {
        std::vector<std::byte> const bytes = initial_contents(spec, stream++);
        Tensor& buffer = device[spec.name] = Tensor({spec.size}, spec.dtype, Memory::device);
        cuda::check(cudaMemcpy(buffer.raw_data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                    "copy a case's input");
        pointers.by_name[spec.name] = buffer.raw_data();
    }
    // A copy from pageable memory may return before it lands, and the backend's stream does not wait for it.
    cuda::check(cudaDeviceSynchronize(), "finish a case's uploads");
    gpu_case.run(gpu, pointers, result.scalars);
    gpu.synchronize();
    for (BufferSpec const& spec : gpu_case.buffers) {
        std::vector<std::byte>& bytes = result.buffers[spec.name];
        bytes.resize(device[spec.name].bytes());
        cuda::check(cudaMemcpy(bytes.data(), device[spec.name].raw_data(), bytes.size(), cudaMemcpyDeviceToHost),
                    "copy a case's output");
    }
    return result;
}

DType buffer_dtype(GpuCase const& gpu_case, std::string const& name) {
    for (BufferSpec const& spec : gpu_case.buffers) {
        if (spec.name == name) return spec.dtype;
    }
    return DType::f32;
}

class CudaBackendAgainstCpu : public ::testing::TestWithParam<std::tuple<GpuCase, DType>> {};

TEST_P(CudaBackendAgainstCpu, SameResults) {
    if (!cuda::device_present()) GTEST_SKIP() << "no CUDA GPU visible";
    auto const& [gpu_case, precision] = GetParam();
    std::string fallback;
    std::unique_ptr<Backend> cpu = make_backend("cpu", precision, &fallback);
    CudaBackend gpu(precision, 0);
    // A CPU without bf16 runs the reference in fp32: then everything after a bf16 GEMM differs by its rounding.
    bool const rounded =
        gpu_case.writes_bf16 || (precision == DType::bf16 && (!fallback.empty() || gpu_case.bf16_rounding_differs));
    double const tolerance = rounded ? bf16_rounding_tolerance : fp32_tolerance;

    RunResult const expected = run_on_cpu(*cpu, gpu_case);
    RunResult const got = run_on_gpu(gpu, gpu_case);
    for (std::string const& output : gpu_case.outputs) {
        DType const dtype = buffer_dtype(gpu_case, output);
        double const difference = relative_difference(as_doubles(got.buffers.at(output), dtype),
                                                      as_doubles(expected.buffers.at(output), dtype));
        EXPECT_LE(difference, tolerance) << output << " of " << gpu_case.name << " in " << dtype_name(precision);
    }
    ASSERT_EQ(got.scalars.size(), expected.scalars.size());
    for (std::size_t i = 0; i < got.scalars.size(); ++i) {
        EXPECT_NEAR(got.scalars[i], expected.scalars[i], tolerance * std::abs(expected.scalars[i]));
    }
}

INSTANTIATE_TEST_SUITE_P(EveryOperation, CudaBackendAgainstCpu,
                         ::testing::Combine(::testing::ValuesIn(gpu_cases()),
                                            ::testing::Values(DType::f32, DType::bf16)),
                         [](auto const& info) {
                             return std::get<0>(info.param).name + "_" + precision_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace axonn
