// Model-level properties that the PyTorch parity test does not isolate: parameter counts of the presets,
// GPT-2's initialisation statistics, padding rows kept at zero, a tiny model learning a fixed batch, and mixed
// precision (bf16 GEMMs) against fp32.
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <numeric>

#include "support/relative_difference.h"

namespace axonn {
namespace {

TEST(GptConfig, PresetParameterCountsMatchGpt2) {
    EXPECT_EQ(gpt_preset("gpt2-small").parameter_count(), 124439808);  // GPT-2 124M, as Hugging Face counts it
    EXPECT_EQ(gpt_preset("gpt2-medium").parameter_count(), 354823168);
    EXPECT_EQ(gpt_preset("gpt2-large").parameter_count(), 774030080);
    EXPECT_EQ(gpt_preset("gpt2-xl").parameter_count(), 1557611200);
    EXPECT_EQ(gpt_preset("gpt2-small").padded_vocab_size(), 50304);
    EXPECT_THROW(gpt_preset("gpt-9"), Error);
}

// AxoNN's benchmark shapes (its Megatron-AxoNN model table): each has about the parameters its name says; the
// names round down to a power of two times 5B or to a round size, so a count may sit up to 5% under its name.
TEST(GptConfig, BenchmarkPresetsHaveTheSizesTheirNamesSay) {
    for (int const billions : {5, 10, 20, 40, 50, 60, 80, 100, 160, 175, 320, 640}) {
        double const count = static_cast<double>(gpt_preset(fmt::format("gpt-{}b", billions)).parameter_count());
        EXPECT_NEAR(count / (billions * 1e9), 1.0, 0.05) << billions << "B preset has " << count << " parameters";
    }
}

TEST(GptConfig, RejectsImpossibleShapes) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.n_head = 3;  // 128 % 3 != 0
    EXPECT_THROW(config.validate(), Error);
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    EXPECT_THROW(Decoder(gpt_preset("gpt2-tiny"), backend, serial, 2, 257), Error);  // longer than the context
}

TEST(GptConfig, RefusesSizesBeyondSixtyFourBits) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.n_layer = 4096;  // every dimension within its own bound...
    config.n_embd = 1 << 17;
    config.n_head = 1 << 17;
    config.max_seq = 1 << 17;
    EXPECT_NO_THROW(config.validate());
    // ...but the L·B·T·32C activation values of 2^20 such sequences would overflow the sizes: refused, not
    // wrapped around.
    EXPECT_THROW(decoder_memory(decoder_architecture(config), GridShape{}, 1 << 20, 1 << 17), Error);
    EXPECT_NO_THROW(decoder_memory(decoder_architecture(gpt_preset("gpt2-small")), GridShape{}, 8, 1024));
}

TEST(Decoder, InitialisationFollowsGpt2) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 1000;  // padded to 1024
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(config, backend, serial, 1, 8);
    model.init_weights(7);
    auto std_of = [&](Param id) {
        float const* x = model.param(id);
        std::int64_t const n = model.layout().local_numel(id);
        double sum = 0, squares = 0;
        for (std::int64_t i = 0; i < n; ++i) sum += x[i], squares += static_cast<double>(x[i]) * x[i];
        return std::sqrt(squares / n - (sum / n) * (sum / n));
    };
    // 98,304 samples each: the standard deviation is within 1% of its target with overwhelming probability.
    EXPECT_NEAR(std_of(Param::qkvw), 0.02, 0.0002);
    EXPECT_NEAR(std_of(Param::fcprojw), 0.02 / std::sqrt(4.0), 0.0001);  // scaled by 1/sqrt(2·L), L = 2
    EXPECT_EQ(model.param(Param::ln1w)[5], 1.0f);
    EXPECT_EQ(model.param(Param::qkvb)[5], 0.0f);
    float const* padding = model.param(Param::wte) + 1000 * config.n_embd;
    EXPECT_TRUE(std::all_of(padding, padding + 24 * config.n_embd, [](float x) { return x == 0.0f; }));
}

TEST(Decoder, OverwritingBackwardEqualsZeroGradPlusAccumulatingBackward) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 100;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(config, backend, serial, 2, 8);
    model.init_weights(5);
    std::vector<std::int32_t> tokens(16), targets(16);
    for (int i = 0; i < 16; ++i) tokens[i] = (i * 7) % 100, targets[i] = (i * 3) % 100;
    Batch const batch{2, 8, tokens.data(), targets.data(), nullptr};
    std::fill(model.grads().begin(), model.grads().end(), 0.0f);
    model.train_forward(batch, Pass{.first = false});  // a later pass of a step: accumulates, here onto zeros
    model.backward();
    std::vector<float> const expected(model.grads().begin(), model.grads().end());
    std::fill(model.grads().begin(), model.grads().end(), 123.0f);  // stale gradients of an earlier step
    model.train_forward(batch);  // a step's first pass: overwrites
    model.backward();
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), model.grads().begin()));
}

TEST(Decoder, LearnsAFixedBatchAndKeepsPaddingAtZero) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 100;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(config, backend, serial, 2, 16);
    model.init_weights(3);
    AdamW optimizer(model.segments(), model.layout().total(), backend, AdamWConfig{});
    std::vector<std::int32_t> tokens(32), targets(32);
    for (int i = 0; i < 32; ++i) tokens[i] = (i * 13) % 100, targets[i] = (i * 17) % 100;
    Batch const batch{2, 16, tokens.data(), targets.data(), nullptr};
    float const first = train_step(model, optimizer, batch, 1e-3f).loss;
    EXPECT_NEAR(first, std::log(100.0f), 0.1f);  // small initial weights: close to uniform over the vocabulary
    float last = first;
    for (int step = 0; step < 30; ++step) last = train_step(model, optimizer, batch, 1e-3f).loss;
    EXPECT_LT(last, 0.5f * first);
    float const* padding = model.param(Param::wte) + 100 * config.n_embd;
    EXPECT_TRUE(std::all_of(padding, padding + 28 * config.n_embd, [](float x) { return x == 0.0f; }));
}

// The bf16 model tests' setting: gpt2-tiny with 100 ids, one serial rank, a batch of 2 × 16 tokens.
class Bf16Model : public ::testing::Test {
protected:
    void SetUp() override {
        config.vocab_size = 100;
        for (int i = 0; i < 32; ++i) tokens[i] = (i * 13) % 100, targets[i] = (i * 17) % 100;
    }
    GptConfig config = gpt_preset("gpt2-tiny");
    ProcessGrid serial{MPI_COMM_SELF, GridShape{}};
    std::vector<std::int32_t> tokens = std::vector<std::int32_t>(32), targets = std::vector<std::int32_t>(32);
    Batch const batch{2, 16, tokens.data(), targets.data(), nullptr};
};

// Mixed precision changes only the GEMMs' inputs, rounded to bf16 (8 bits of mantissa: 2⁻⁹ relative each):
// the logits and the gradients stay within a few rounding errors of fp32's, norm-wise. Tolerances: logits 1e-2,
// gradients 2e-2 (the backward's GEMMs compound the forward's rounding); measured 3.8e-3 and 4.5e-3. A bf16 model
// that silently ran in fp32 would match far closer than 2⁻¹²: that is checked too.
TEST_F(Bf16Model, LogitsAndGradientsFollowFp32) {
    struct Outcome {
        std::vector<float> logits, grads;
        float loss;
    };
    auto run = [&](DType precision) {
        CpuBackend backend(precision);
        Decoder model(config, backend, serial, 2, 16, DecoderOptions{.precision = precision});
        model.init_weights(3);
        Outcome outcome;
        outcome.loss = model.train_forward(batch);
        std::int64_t const logits = 2 * 16 * config.padded_vocab_size();
        outcome.logits.assign(model.logits(), model.logits() + logits);
        model.backward();
        outcome.grads.assign(model.grads().begin(), model.grads().end());
        return outcome;
    };
    Outcome const fp32 = run(DType::f32), bf16 = run(DType::bf16);
    double const logits_error = testing::relative_difference(bf16.logits, fp32.logits);
    EXPECT_LT(logits_error, 1e-2);
    EXPECT_GT(logits_error, 0x1p-12) << "the bf16 model computed in fp32";
    EXPECT_NEAR(bf16.loss, fp32.loss, 1e-2 * fp32.loss);
    EXPECT_LT(testing::relative_difference(bf16.grads, fp32.grads), 2e-2);
}

// AdamW rewrites the bf16 GEMM copy in the same pass as the fp32 weights: after two steps, the logits equal (bit
// for bit) those of a model given the same fp32 weights whose copy is converted afresh.
TEST_F(Bf16Model, CopyWrittenByTheUpdateEqualsAFreshConversion) {
    CpuBackend backend(DType::bf16);
    DecoderOptions const options{.precision = DType::bf16};
    Decoder trained(config, backend, serial, 2, 16, options), copied(config, backend, serial, 2, 16, options);
    trained.init_weights(3);
    copied.init_weights(4);
    AdamW optimizer(trained.segments(), trained.layout().total(), backend, AdamWConfig{});
    for (int step = 0; step < 2; ++step) ASSERT_TRUE(train_step(trained, optimizer, {&batch, 1}, 1e-2f).updated);
    for (int id = 0; id < param_count; ++id) {  // read without touching `trained`'s copy
        float const* weights = trained.param_values(Param{id});
        std::copy(weights, weights + trained.layout().local_numel(id), copied.param(Param{id}));
    }

    std::int64_t const logits = 2 * 16 * config.padded_vocab_size();
    trained.train_forward(batch);
    std::vector<float> const from_update(trained.logits(), trained.logits() + logits);
    copied.train_forward(batch);
    std::vector<float> const from_conversion(copied.logits(), copied.logits() + logits);
    EXPECT_EQ(from_update, from_conversion);
}

}  // namespace
}  // namespace axonn
