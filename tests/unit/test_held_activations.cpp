// Mixed precision holds the activations that only bf16 GEMMs read in bf16 alone (model/decoder_layout.h): the norms'
// outputs, the MLP's activation and, where attention runs its tile GEMMs in bf16 (sequences longer than one bf16
// query tile, 128 tokens), each layer's [q | k | v]. A bf16 kernel rounds an fp32 operand to nearest even as it
// goes in; the held rounding is that same rounding, so everything must be bit for bit what rounding in the kernel
// gives. The MLP's pre-activation is held rounded too (its backward reads the rounding, widened): the recomputed,
// short-batch and near-fp32 cases below cover it, with GPT-2's MLP biases drawn large (the forward adds them
// there), so that a rounding of anything but what GELU read would leave fp32's gradients far behind.
//   - the backend: a Linear's forward and weight gradient, and attention forward and backward, on an input held
//     only in bf16 against the same input in fp32;
//   - the model (GPT-2 and Llama, 256 tokens, so that [q | k | v] is held in bf16 too): recomputing each layer in
//     the backward against keeping it (the recomputation writes the same held buffers), bit for bit;
//   - a batch of 64 tokens on a model built for 256 (whose attention runs in fp32, [q | k | v] kept in fp32 in the
//     bytes of a bf16 slot) against a model built for 64 tokens, bit for bit;
//   - and the 256-token bf16 step against fp32's, as the bf16 model's test holds it (test_gpt_model.cpp): the loss
//     within 1e-2 relative and the gradients within 2e-2, norm-wise (what is held must be what was computed).
// The kernels writing bf16 are tested against writing fp32 and rounding in test_fused_kernels.cpp, and the whole
// step against the builds before this layout by the bitwise runs recorded in docs/PERFORMANCE.md.
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/model/model_config.h"

#include "axonn/core/rng.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace axonn {
namespace {

std::vector<float> normal_values(std::int64_t n, std::uint64_t stream) {
    std::vector<float> values(static_cast<std::size_t>(n));
    fill_normal(values, PhiloxKey{5, stream}, 0, 0.0f, 1.0f);
    return values;
}

std::vector<bfloat16> rounded(std::vector<float> const& values) {
    std::vector<bfloat16> out(values.size());
    cpu::to_bf16(out.data(), values.data(), static_cast<std::int64_t>(values.size()));
    return out;
}

bool bitwise_equal(std::vector<float> const& a, std::vector<float> const& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(HeldInBf16, ALinearOnAnInputHeldInBf16EqualsTheLinearRoundingIt) {
    constexpr std::int64_t M = 40, K = 48, N = 56;
    CpuBackend backend(DType::bf16);
    std::vector<float> const inp = normal_values(M * K, 1), dout = normal_values(M * N, 2);
    std::vector<bfloat16> const weight = rounded(normal_values(N * K, 3)), held = rounded(inp);
    WeightView const w{weight.data(), DType::bf16};
    std::vector<float> out_rounding(M * N), out_held(M * N), dw_rounding(N * K), dw_held(N * K);
    backend.linear_forward(out_rounding.data(), inp.data(), w, nullptr, M, K, N);
    backend.linear_forward(out_held.data(), GemmInput(nullptr, held.data()), w, nullptr, M, K, N);
    backend.linear_backward_weight(dw_rounding.data(), nullptr, dout.data(), inp.data(), M, K, N,
                                   GradWrite::overwrite);
    backend.linear_backward_weight(dw_held.data(), nullptr, dout.data(), GemmInput(nullptr, held.data()), M, K, N,
                                   GradWrite::overwrite);
    EXPECT_TRUE(bitwise_equal(out_held, out_rounding));
    EXPECT_TRUE(bitwise_equal(dw_held, dw_rounding));
}

TEST(HeldInBf16, AttentionOnQkvHeldInBf16EqualsAttentionRoundingIt) {
    // 200 tokens: more than one bf16 query tile, so attention runs in bf16; grouped queries (4 heads, 2 of keys).
    constexpr int B = 1, T = 200, C = 64, NH = 4, NKV = 2;
    constexpr std::int64_t W = C + 2 * NKV * (C / NH), BT = B * T;
    CpuBackend backend(DType::bf16);
    std::vector<float> const qkv = normal_values(BT * W, 4), dout = normal_values(BT * C, 5);
    std::vector<bfloat16> const held = rounded(qkv);
    std::vector<float> out_rounding(BT * C), lse_rounding(B * NH * T), dqkv_rounding(BT * W, 0.0f);
    std::vector<float> out_held(BT * C), lse_held(B * NH * T), dqkv_held(BT * W, 0.0f);
    backend.attention_forward(out_rounding.data(), lse_rounding.data(), qkv.data(), B, T, C, NH, NKV);
    backend.attention_backward(dqkv_rounding.data(), dout.data(), qkv.data(), out_rounding.data(),
                               lse_rounding.data(), B, T, C, NH, NKV);
    GemmInput const held_qkv(nullptr, held.data());
    backend.attention_forward(out_held.data(), lse_held.data(), held_qkv, B, T, C, NH, NKV);
    backend.attention_backward(dqkv_held.data(), dout.data(), held_qkv, out_held.data(), lse_held.data(), B, T, C, NH,
                               NKV);
    EXPECT_TRUE(bitwise_equal(out_held, out_rounding));
    EXPECT_TRUE(bitwise_equal(lse_held, lse_rounding));
    EXPECT_TRUE(bitwise_equal(dqkv_held, dqkv_rounding));
}

// A model of either family with context 256 (GPT-2's gpt2-tiny, a Llama of the same size) and a 300-word
// vocabulary.
ModelConfig small_model(bool llama) {
    if (llama) {
        LlamaConfig config = llama_preset("llama-tiny");
        config.vocab_size = 300;
        config.max_position_embeddings = 256;
        return config;
    }
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 300;
    return config;
}

struct Step {
    float loss;
    std::vector<float> grads;
};

// One training step of a model built for `max_seq` tokens on a batch of 2 × T.
Step step(bool llama, int max_seq, int T, Recompute recompute, DType precision = DType::bf16) {
    CpuBackend backend(precision);
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(small_model(llama), backend, serial, 2, max_seq,
                  DecoderOptions{.recompute = recompute, .precision = precision});
    model.init_weights(21);
    if (!llama) {
        GptConfig const config = gpt_preset("gpt2-tiny");
        std::int64_t const biases = std::int64_t{config.n_layer} * 4 * config.n_embd;  // fcb [L, 4C]
        std::vector<float> const drawn = normal_values(biases, 9);
        std::copy(drawn.begin(), drawn.end(), model.param(Param::fcb));
    }
    std::vector<std::int32_t> tokens(2 * T), targets(2 * T);
    for (int i = 0; i < 2 * T; ++i) tokens[i] = (i * 29) % 300, targets[i] = (i * 31 + 7) % 300;
    Step result{model.train_forward(Batch{2, T, tokens.data(), targets.data(), nullptr}, Pass{}), {}};
    model.backward();
    result.grads.assign(model.grads().begin(), model.grads().end());
    return result;
}

class HeldInBf16Model : public ::testing::TestWithParam<bool> {};

TEST_P(HeldInBf16Model, RecomputingEachLayerGivesWhatKeepingItGives) {
    Step const kept = step(GetParam(), 256, 256, Recompute::none);
    Step const recomputed = step(GetParam(), 256, 256, Recompute::layer);
    EXPECT_EQ(recomputed.loss, kept.loss);
    EXPECT_TRUE(bitwise_equal(recomputed.grads, kept.grads));
}

TEST_P(HeldInBf16Model, AShortBatchGivesWhatAModelBuiltForItGives) {
    Step const on_long_model = step(GetParam(), 256, 64, Recompute::none);
    Step const on_its_own = step(GetParam(), 64, 64, Recompute::none);
    EXPECT_EQ(on_long_model.loss, on_its_own.loss);
    EXPECT_TRUE(bitwise_equal(on_long_model.grads, on_its_own.grads));
}

TEST_P(HeldInBf16Model, ALongBatchStaysNearFp32) {
    Step const bf16 = step(GetParam(), 256, 256, Recompute::none);
    Step const fp32 = step(GetParam(), 256, 256, Recompute::none, DType::f32);
    EXPECT_NEAR(bf16.loss, fp32.loss, 1e-2 * fp32.loss);
    EXPECT_LT(testing::relative_difference(bf16.grads, fp32.grads), 2e-2);
}

INSTANTIATE_TEST_SUITE_P(Families, HeldInBf16Model, ::testing::Bool(),
                         [](auto const& info) { return std::string(info.param ? "llama" : "gpt2"); });

}  // namespace
}  // namespace axonn
