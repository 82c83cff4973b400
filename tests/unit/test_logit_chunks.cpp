// The LM head and its loss in chunks of rows (DecoderOptions::logit_rows), serially, against the same model with all
// rows at once. Each row's logits, loss and dlogits do not depend on the chunking; only the head's weight gradient,
// a sum over the rows, is added up chunk by chunk, in another order. So, per case of the table below:
//   - the pass's loss and every token's loss: within 1e-6 relative (measured: the loss equal, the token losses
//     within 5e-8: the logits' GEMM rounds a little differently for fewer rows);
//   - every gradient tensor: within 1e-5 relative, norm-wise (measured: within 5e-7), and in bf16 within 1e-3:
//     on an Intel Xeon with AMX, oneDNN's bf16 kernels sum a product's inner terms in an order that depends on its
//     rows, so the logits of 5 rows and of 32 differ in their last fp32 bits and tip a few of dlogits' bf16
//     roundings (2^-8 of an element each), which later roundings pass on (measured 1.9e-4 there, and within 5e-7
//     with oneDNN held to avx512_core_bf16 on the same CPU: ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16); the last chunk's
//     backward skipped moved them by 0.26 to 0.55;
//   - a validation forward (targets, no backward): the same losses;
// and a chunked model keeps no logits, refuses a forward without targets of more rows than it holds, and the
// memory model counts one chunk of logits. (Grids: tests/mpi/test_model_grids.cpp; traffic: the perfmodel tests.)
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "support/micro_model.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace axonn {
namespace {

using testing::relative_difference;

constexpr int B = 2, T = 16;

struct ChunkCase {
    std::string name;
    bool llama = false;  // an untied head: its own vocabulary block
    DType precision = DType::f32;
    Recompute recompute = Recompute::none;
    int passes = 1;      // micro-batches of one sequence each: the first pass overwrites, the second accumulates
    int logit_rows = 5;  // 32 rows in 7 chunks of 4 and 5 rows
};

void PrintTo(ChunkCase const& c, std::ostream* out) { *out << c.name; }

std::vector<ChunkCase> chunk_cases() {
    return {
        {.name = "gpt2_fp32"},
        {.name = "gpt2_bf16", .precision = DType::bf16},
        {.name = "llama_fp32", .llama = true},
        {.name = "gpt2_two_passes_recomputed", .recompute = Recompute::layer, .passes = 2},
        {.name = "llama_bf16_two_passes", .llama = true, .precision = DType::bf16, .passes = 2},
        {.name = "one_row_per_chunk", .logit_rows = 1},
    };
}

struct Outcome {
    float loss = 0, eval_loss = 0;
    std::vector<float> token_losses, eval_token_losses, grads;
};

class LogitChunks : public ::testing::TestWithParam<ChunkCase> {
protected:
    void SetUp() override {
        for (int i = 0; i < B * T; ++i) tokens_[i] = (i * 13) % 300, targets_[i] = i % 11 == 4 ? -1 : (i * 17) % 300;
    }

    Outcome run(int logit_rows) {
        ChunkCase const& c = GetParam();
        CpuBackend backend(c.precision);
        int const rows_per_pass = B / c.passes;
        DecoderOptions const options{.recompute = c.recompute, .precision = c.precision, .logit_rows = logit_rows};
        Decoder model =
            c.llama ? Decoder(decoder_architecture(testing::micro_llama()), backend, serial_, rows_per_pass, T, options)
                    : Decoder(testing::micro_model(), backend, serial_, rows_per_pass, T, options);
        model.init_weights(11);
        std::vector<Batch> passes;
        for (int p = 0; p < c.passes; ++p) {
            std::size_t const first = static_cast<std::size_t>(p) * rows_per_pass * T;
            passes.push_back({rows_per_pass, T, tokens_.data() + first, targets_.data() + first, nullptr});
        }
        double const total = c.passes > 1 ? model.global_loss_weight(passes) : 0.0;
        Outcome outcome;
        for (int p = 0; p < c.passes; ++p) {
            outcome.loss += model.train_forward(passes[p], Pass{total, p == 0, p + 1 == c.passes});
            outcome.token_losses.insert(outcome.token_losses.end(), model.token_losses(),
                                        model.token_losses() + rows_per_pass * T);
            model.backward();
        }
        outcome.grads.assign(model.grads().begin(), model.grads().end());
        for (int p = 0; p < c.passes; ++p) {
            outcome.eval_loss += model.forward(passes[p], total);
            outcome.eval_token_losses.insert(outcome.eval_token_losses.end(), model.token_losses(),
                                             model.token_losses() + rows_per_pass * T);
        }
        layout_ = std::make_unique<ShardLayout>(model.layout());
        return outcome;
    }

    ProcessGrid serial_{MPI_COMM_SELF, GridShape{}};
    std::vector<std::int32_t> tokens_ = std::vector<std::int32_t>(B * T), targets_ = std::vector<std::int32_t>(B * T);
    std::unique_ptr<ShardLayout> layout_;
};

TEST_P(LogitChunks, LossesAndGradientsEqualAllRowsAtOnce) {
    Outcome const whole = run(0);
    Outcome const chunked = run(GetParam().logit_rows);
    EXPECT_NEAR(chunked.loss, whole.loss, 1e-6 * std::abs(whole.loss));
    EXPECT_NEAR(chunked.eval_loss, whole.eval_loss, 1e-6 * std::abs(whole.eval_loss));
    EXPECT_LT(relative_difference(chunked.token_losses, whole.token_losses), 1e-6);
    EXPECT_LT(relative_difference(chunked.eval_token_losses, whole.eval_token_losses), 1e-6);
    for (int id = 0; id < layout_->count(); ++id) {
        auto const begin = static_cast<std::ptrdiff_t>(layout_->offset(id));
        auto const end = begin + static_cast<std::ptrdiff_t>(layout_->local_numel(id));
        std::vector<float> const mine(chunked.grads.begin() + begin, chunked.grads.begin() + end);
        std::vector<float> const expected(whole.grads.begin() + begin, whole.grads.begin() + end);
        double const tolerance = GetParam().precision == DType::bf16 ? 1e-3 : 1e-5;
        EXPECT_LT(relative_difference(mine, expected), tolerance) << "gradient of " << layout_->param(id).name;
    }
}

INSTANTIATE_TEST_SUITE_P(Table, LogitChunks, ::testing::ValuesIn(chunk_cases()),
                         [](auto const& info) { return info.param.name; });

TEST(LogitChunks, CountIsTheFewestChunksOfAtMostTheRows) {
    EXPECT_EQ(logit_chunks(32, 0), 1);
    EXPECT_EQ(logit_chunks(32, 32), 1);
    EXPECT_EQ(logit_chunks(32, 31), 2);
    EXPECT_EQ(logit_chunks(32, 5), 7);
    EXPECT_EQ(logit_chunks(2048, 1024), 2);
    EXPECT_EQ(logit_chunks(1, 1024), 1);
}

TEST(LogitChunks, AChunkedModelHoldsNoLogitsAndRefusesAForwardWithoutTargets) {
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(testing::micro_model(), backend, serial, B, T, DecoderOptions{.logit_rows = 8});
    model.init_weights(3);
    EXPECT_EQ(model.logit_capacity(), 8);
    std::vector<std::int32_t> tokens(B * T, 7), targets(B * T, 9);
    model.forward(Batch{B, T, tokens.data(), targets.data(), nullptr});
    EXPECT_FALSE(model.holds_logits());
    EXPECT_THROW(model.logits(), InternalError);
    EXPECT_THROW(model.forward(Batch{B, T, tokens.data(), nullptr, nullptr}), InternalError);
    // A forward of no more rows than it holds keeps them all, targets or not.
    model.forward(Batch{1, 8, tokens.data(), nullptr, nullptr});
    EXPECT_TRUE(model.holds_logits());
    EXPECT_NO_THROW(model.logits());
}

TEST(LogitChunks, MemoryModelCountsOneChunkOfLogits) {
    GptConfig const config = testing::micro_model();
    std::int64_t const Vp = config.padded_vocab_size();
    DecoderMemory const whole = decoder_memory(decoder_architecture(config), GridShape{}, B, T);
    DecoderMemory const chunked = decoder_memory(decoder_architecture(config), GridShape{}, B, T, DecoderOptions{.logit_rows = 5});
    EXPECT_EQ(whole.activation_bytes - chunked.activation_bytes, (B * T - 5) * Vp * 4);
    EXPECT_EQ(whole.total() - chunked.total(), (B * T - 5) * Vp * 4);
    // More rows than the pass has: all of them, as without chunks.
    EXPECT_EQ(decoder_memory(decoder_architecture(config), GridShape{}, B, T, DecoderOptions{.logit_rows = 1000}).total(), whole.total());
}

}  // namespace
}  // namespace axonn
