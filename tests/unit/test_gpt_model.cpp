// Model-level properties that the PyTorch parity test does not isolate: parameter counts of the presets,
// GPT-2's initialisation statistics, padding rows kept at zero, and a tiny model learning a fixed batch.
#include "axonn/core/error.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/gpt.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

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

TEST(GptConfig, RejectsImpossibleShapes) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.n_head = 3;  // 128 % 3 != 0
    EXPECT_THROW(config.validate(), Error);
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    EXPECT_THROW(Gpt(gpt_preset("gpt2-tiny"), backend, serial, 2, 257), Error);  // longer than the context
}

TEST(GptConfig, RefusesSizesBeyondSixtyFourBits) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.n_layer = 4096;  // every dimension within its own bound...
    config.n_embd = 1 << 17;
    config.n_head = 1 << 17;
    config.max_seq = 1 << 17;
    EXPECT_NO_THROW(config.validate());
    // ...but L·B·NH·T² attention values would overflow the sizes: refused, not wrapped around.
    EXPECT_THROW(gpt_memory(config, GridShape{}, 1024, 1 << 17), Error);
    EXPECT_NO_THROW(gpt_memory(gpt_preset("gpt2-small"), GridShape{}, 8, 1024));
}

TEST(Gpt, InitialisationFollowsGpt2) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 1000;  // padded to 1024
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Gpt model(config, backend, serial, 1, 8);
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

TEST(Gpt, OverwritingBackwardEqualsZeroGradPlusAccumulatingBackward) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 100;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Gpt model(config, backend, serial, 2, 8);
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

TEST(Gpt, LearnsAFixedBatchAndKeepsPaddingAtZero) {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 100;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Gpt model(config, backend, serial, 2, 16);
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

}  // namespace
}  // namespace axonn
