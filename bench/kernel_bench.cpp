// Per-kernel speed at GPT-2 small's shapes for B·T = 256 tokens (B = 4, T = 64): where a training step's time
// goes outside the model. Google Benchmark; run `build/bench/kernel_bench` with OMP_NUM_THREADS=1 (or 2, for the
// fp32 GEMMs' threading).
// GEMMs report FLOP/s, the memory-bound kernels bytes/s.
#include "axonn/core/tensor.h"
#include "axonn/kernels/cpu/adamw.h"
#include "axonn/kernels/cpu/attention.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/cross_entropy.h"
#include "axonn/kernels/cpu/gelu.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/layernorm.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

namespace {

using namespace axonn::cpu;
using axonn::AdamWStep;

constexpr int B = 4, T = 64, C = 768, NH = 12, V = 50257, Vp = 50304;
constexpr std::int64_t BT = B * T;

// A Linear's fp32 GEMM at range (M, N, K) — M rows of activations, N outputs, K inputs — in FLOP/s: the forward's
// Y[M,N] = X[M,K] · W[N,K]ᵀ, or the weight gradient's dW[N,K] = dY[M,N]ᵀ · X[M,K] (A transposed, which gemm
// leaves to oneDNN's threads).
void run_linear_gemm(benchmark::State& state, bool weight_gradient) {
    std::int64_t const M = state.range(0), N = state.range(1), K = state.range(2);
    // A: X[M,K] or dY[M,N]; B: W[N,K] or X[M,K]; out: Y[M,N] or dW[N,K].
    std::vector<float> a(M * std::max(N, K), 0.5f), b(std::max(M, N) * K, 0.25f), out(std::max(M, N) * std::max(N, K));
    for (auto _ : state) {
        if (weight_gradient) {
            gemm<float>(true, false, N, K, M, 1.0f, a.data(), N, b.data(), K, 0.0f, out.data(), K);
        } else {
            gemm<float>(false, true, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, out.data(), N);
        }
    }
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LinearGemm(benchmark::State& state) { run_linear_gemm(state, false); }
BENCHMARK(BM_LinearGemm)
    ->Args({BT, 3 * C, C})   // qkv
    ->Args({BT, C, C})       // attention projection
    ->Args({BT, 4 * C, C})   // MLP up
    ->Args({BT, C, 4 * C})   // MLP down
    ->Args({BT, Vp, C});     // LM head

// A Linear's input gradient dX[M,K] = dY[M,N] · W[N,K] at range (M, N, K, way): B is the weight as the model
// holds it (a 64-byte aligned tensor, rows K floats apart), and way 0 runs it in place, way 1 from a copy at a
// padded row stride (GemmVariant::padded_b, the copy counted in the time).
void BM_InputGradientGemm(benchmark::State& state) {
    std::int64_t const M = state.range(0), N = state.range(1), K = state.range(2);
    GemmVariant const way = state.range(3) == 0 ? GemmVariant::whole : GemmVariant::padded_b;
    std::vector<float> dout(M * N, 0.5f), dinp(M * K);
    axonn::Tensor weight({N, K}, axonn::DType::f32);
    std::fill_n(weight.data<float>(), N * K, 0.25f);
    for (auto _ : state) {
        gemm_way(way, false, false, M, K, N, 1.0f, dout.data(), N, weight.data<float>(), K, 0.0f, dinp.data(), K);
    }
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_InputGradientGemm)
    ->ArgsProduct({{BT}, {3 * C}, {C}, {0, 1}})       // qkv
    ->ArgsProduct({{BT}, {C}, {C}, {0, 1}})           // attention projection
    ->ArgsProduct({{BT}, {4 * C}, {C}, {0, 1}})       // MLP up
    ->ArgsProduct({{BT}, {C}, {4 * C}, {0, 1}});      // MLP down: W[768, 3072], rows 12 KiB apart

void BM_WeightGradientGemm(benchmark::State& state) { run_linear_gemm(state, true); }
BENCHMARK(BM_WeightGradientGemm)
    ->Args({BT, 3 * C, C})
    ->Args({BT, C, C})
    ->Args({BT, 4 * C, C})
    ->Args({BT, C, 4 * C});

// The same GEMMs on bf16 inputs with fp32 results, as the bf16 backend runs them (conversions not counted).
void BM_LinearGemmBf16(benchmark::State& state) {
    std::int64_t const M = state.range(0), N = state.range(1), K = state.range(2);
    std::vector<axonn::bfloat16> a(M * K, axonn::to_bfloat16(0.5f)), b(N * K, axonn::to_bfloat16(0.25f));
    std::vector<float> c(M * N);
    for (auto _ : state) gemm_bf16(false, true, M, N, K, a.data(), K, b.data(), K, 0.0f, c.data(), N);
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LinearGemmBf16)
    ->Args({BT, 3 * C, C})
    ->Args({BT, C, C})
    ->Args({BT, 4 * C, C})
    ->Args({BT, C, 4 * C})
    ->Args({BT, Vp, C});

// Rounding an activation to bf16 for a GEMM: the LM head's logits gradient, the largest one.
void BM_ToBf16(benchmark::State& state) {
    std::vector<float> in(BT * Vp, 0.3f);
    std::vector<axonn::bfloat16> out(in.size());
    for (auto _ : state) to_bf16(out.data(), in.data(), static_cast<std::int64_t>(in.size()));
    state.SetBytesProcessed(state.iterations() * BT * Vp * 6);
}
BENCHMARK(BM_ToBf16);

void BM_LayerNormForward(benchmark::State& state) {
    std::vector<float> inp(BT * C, 1.0f), out(BT * C), mean(BT), rstd(BT), weight(C, 1.0f), bias(C, 0.0f);
    std::vector<double> stats(2 * BT);
    for (auto _ : state) {
        layernorm_statistics(stats.data(), inp.data(), BT, C);
        layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), stats.data(),
                          BT, C, C);
    }
    state.SetBytesProcessed(state.iterations() * 2 * BT * C * 4);
}
BENCHMARK(BM_LayerNormForward);

// The MLP's activation at gpt2-small's width, with its Linear's bias: Arg(1) the fused pass (bias_gelu_forward),
// Arg(0) the sequence it replaced (the bias added after the GEMM, as linear_forward's own loop does, then GELU).
void BM_BiasGeluForward(benchmark::State& state) {
    bool const fused = state.range(0) == 1;
    constexpr std::int64_t F = 4 * C;
    std::vector<float> pre(BT * F, 0.3f), out(BT * F), bias(F, 0.01f);
    for (auto _ : state) {
        if (fused) {
            bias_gelu_forward(out.data(), pre.data(), bias.data(), BT, F);
        } else {
            for (std::int64_t m = 0; m < BT; ++m) {
                for (std::int64_t f = 0; f < F; ++f) pre[m * F + f] += bias[f];
            }
            bias_gelu_forward(out.data(), pre.data(), static_cast<float const*>(nullptr), BT, F);
        }
        benchmark::DoNotOptimize(out.data());
    }
}
BENCHMARK(BM_BiasGeluForward)->Arg(0)->Arg(1);

// Its backward: Arg(1) the fused pass (dpre written, dbias summed from it), Arg(0) the passes it replaced: dpre
// zeroed, GELU's gradient into it (written here; the old kernel added to the zeros, one more read), then the bias
// gradient summed from dpre by the Linear's backward.
void BM_GeluBiasBackward(benchmark::State& state) {
    bool const fused = state.range(0) == 1;
    constexpr std::int64_t F = 4 * C;
    std::vector<float> pre(BT * F, 0.3f), dout(BT * F, 0.01f), dpre(BT * F), dbias(F);
    for (auto _ : state) {
        if (fused) {
            gelu_bias_backward(dpre.data(), dbias.data(), pre.data(), dout.data(), BT, F);
        } else {
            std::fill(dpre.begin(), dpre.end(), 0.0f);
            benchmark::ClobberMemory();
            gelu_bias_backward(dpre.data(), static_cast<float*>(nullptr), pre.data(), dout.data(), BT, F);
            for (std::int64_t m = 0; m < BT; ++m) {
                for (std::int64_t f = 0; f < F; ++f) dbias[f] += dpre[m * F + f];
            }
        }
        benchmark::DoNotOptimize(dpre.data());
    }
}
BENCHMARK(BM_GeluBiasBackward)->Arg(0)->Arg(1);

// Fused attention's forward and backward for one sequence length (the argument) at GPT-2 small's heads, with
// B·T = 1024 tokens. FLOP/s counts the seven GEMMs over the score tiles it computes (forward 2, backward 5).
void BM_AttentionForwardBackward(benchmark::State& state) {
    int const seq = static_cast<int>(state.range(0)), batch = std::max(1, 1024 / seq);
    std::int64_t const tokens = static_cast<std::int64_t>(batch) * seq;
    std::vector<float> qkv(tokens * 3 * C, 0.1f), out(tokens * C), lse(batch * NH * seq), dqkv(tokens * 3 * C),
        dout(tokens * C, 0.01f);
    for (auto _ : state) {
        attention_forward(out.data(), lse.data(), qkv.data(), batch, seq, C, NH, NH);
        attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), batch, seq, C, NH, NH);
    }
    double const flops = 7.0 * 2.0 * static_cast<double>(attention_scores_computed(seq)) * (C / NH) * batch * NH;
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionForwardBackward)->Arg(64)->Arg(128)->Arg(256)->Arg(1024);

// The same in bf16, as the bf16 backend runs it: qkv and dout rounded to bf16 (counted in the time), every tile
// GEMM on bf16 inputs.
void BM_AttentionForwardBackwardBf16(benchmark::State& state) {
    int const seq = static_cast<int>(state.range(0)), batch = std::max(1, 1024 / seq);
    std::int64_t const tokens = static_cast<std::int64_t>(batch) * seq;
    std::vector<float> qkv(tokens * 3 * C, 0.1f), out(tokens * C), lse(batch * NH * seq), dqkv(tokens * 3 * C),
        dout(tokens * C, 0.01f);
    std::vector<axonn::bfloat16> qkv_bf16(qkv.size()), dout_bf16(dout.size());
    for (auto _ : state) {
        to_bf16(qkv_bf16.data(), qkv.data(), static_cast<std::int64_t>(qkv.size()));
        attention_forward_bf16(out.data(), lse.data(), qkv_bf16.data(), batch, seq, C, NH, NH);
        to_bf16(qkv_bf16.data(), qkv.data(), static_cast<std::int64_t>(qkv.size()));
        to_bf16(dout_bf16.data(), dout.data(), static_cast<std::int64_t>(dout.size()));
        attention_backward_bf16(dqkv.data(), dout_bf16.data(), qkv_bf16.data(), out.data(), lse.data(), batch, seq, C,
                                NH, NH);
    }
    double const flops = 7.0 * 2.0 * static_cast<double>(attention_scores_computed(seq)) * (C / NH) * batch * NH;
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionForwardBackwardBf16)->Arg(64)->Arg(128)->Arg(256)->Arg(1024);

void BM_CrossEntropyForwardBackward(benchmark::State& state) {
    std::vector<float> logits(BT * Vp, 0.01f), losses(BT), lse(BT), row_max(BT), dlosses(BT, 1.0f / BT);
    std::vector<double> sums(2 * BT);
    std::vector<std::int32_t> targets(BT, 42);
    for (auto _ : state) {
        cross_entropy_max(row_max.data(), logits.data(), BT, V, Vp);
        cross_entropy_sums(sums.data(), logits.data(), row_max.data(), targets.data(), BT, V, Vp, 0);
        cross_entropy_losses(losses.data(), lse.data(), row_max.data(), sums.data(), targets.data(), BT);
        cross_entropy_backward(logits.data(), logits.data(), lse.data(), targets.data(), dlosses.data(), BT, V, Vp, 0);
    }
    state.SetBytesProcessed(state.iterations() * 3 * BT * Vp * 4);
}
BENCHMARK(BM_CrossEntropyForwardBackward);

void BM_AdamW(benchmark::State& state) {
    std::int64_t const n = state.range(0);
    std::vector<float> param(n, 0.1f), grad(n, 0.01f), m(n), v(n);
    AdamWStep const step{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
    for (auto _ : state) adamw_update(param.data(), grad.data(), m.data(), v.data(), n, step);
    state.SetBytesProcessed(state.iterations() * n * 28);  // reads p, g, m, v; writes p, m, v
}
BENCHMARK(BM_AdamW)->Arg(1 << 24);

}  // namespace

BENCHMARK_MAIN();
