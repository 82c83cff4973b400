// Training on fine-tuning records (prepare --format jsonl) counts only the response targets: a step's loss is the
// mean of the per-token losses over the targets the loader's mask keeps, its gradient does not depend on what the
// prompt targets are, and a batch with no response target is a step of loss 0 and gradient 0, not NaN.
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/io/prepare.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/data_loader.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"

#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace axonn {
namespace {

constexpr int B = 2, T = 32;

class FinetuneStep : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream records(dir_ / "records.jsonl");
        for (int i = 0; i < 20; ++i) {
            records << R"({"prompt": "What is )" << i << R"( plus one? ", "response": ")" << i + 1 << R"(."})" << "\n";
        }
        records.close();
        PrepareOptions options;
        options.inputs = {dir_ / "records.jsonl"};
        options.out_dir = dir_ / "data";
        options.tokenizer = "byte";
        options.format = "jsonl";
        prepare_shards(options);
        DataLoader loader(dir_ / "data" / "train.bin", B, T, ShardTokenizer{"byte", 257});
        loader.next_batch(tokens_.data(), targets_.data(), mask_.data());
        config_.vocab_size = 257;
    }

    std::unique_ptr<Decoder> make_model() {
        auto model = std::make_unique<Decoder>(config_, backend_, serial_, B, T);
        model->init_weights(11);
        return model;
    }

    // The gradient of one pass over `targets` with the loader's mask.
    std::vector<float> gradient(std::vector<std::int32_t> const& targets) {
        std::unique_ptr<Decoder> const model = make_model();
        model->train_forward(Batch{B, T, tokens_.data(), targets.data(), mask_.data()});
        model->backward();
        return {model->grads().begin(), model->grads().end()};
    }

    testing::TempDir temp_dir_;
    std::filesystem::path const& dir_ = temp_dir_.path();
    std::vector<std::int32_t> tokens_ = std::vector<std::int32_t>(B * T), targets_ = tokens_;
    std::vector<float> mask_ = std::vector<float>(B * T);
    GptConfig config_ = gpt_preset("gpt2-micro");
    CpuBackend backend_;
    ProcessGrid serial_{MPI_COMM_SELF, GridShape{}};
};

TEST_F(FinetuneStep, TheLossIsTheMeanOverTheResponseTargets) {
    double const counted = std::accumulate(mask_.begin(), mask_.end(), 0.0);
    ASSERT_GT(counted, 0);
    ASSERT_LT(counted, B * T / 2) << "the prompts should outnumber the responses";
    std::unique_ptr<Decoder> const owner = make_model();
    Decoder& model = *owner;
    model.forward(Batch{B, T, tokens_.data(), targets_.data(), nullptr});
    double response_sum = 0;
    for (int i = 0; i < B * T; ++i) response_sum += mask_[i] * model.token_losses()[i];
    AdamW optimizer(model.segments(), model.layout().total(), backend_, AdamWConfig{});
    StepResult const step =
        train_step(model, optimizer, Batch{B, T, tokens_.data(), targets_.data(), mask_.data()}, 1e-3f);
    EXPECT_NEAR(step.loss, response_sum / counted, 1e-6 * response_sum / counted);
}

TEST_F(FinetuneStep, PromptTargetsDoNotChangeTheGradient) {
    std::vector<std::int32_t> other = targets_;
    for (int i = 0; i < B * T; ++i) {
        if (mask_[i] == 0.0f) other[i] = (other[i] + 97) % 257;
    }
    ASSERT_NE(other, targets_);
    EXPECT_EQ(gradient(other), gradient(targets_));
    std::vector<std::int32_t> response_changed = targets_;
    for (int i = 0; i < B * T; ++i) {
        if (mask_[i] == 1.0f) response_changed[i] = (response_changed[i] + 97) % 257;
    }
    EXPECT_NE(gradient(response_changed), gradient(targets_));
}

TEST_F(FinetuneStep, ABatchWithNoResponseTargetIsAStepOfZeroLossAndGradient) {
    std::fill(mask_.begin(), mask_.end(), 0.0f);
    for (int micro_batch : {0, 1}) {  // one pass normalises itself; several share the step's total weight of 0
        std::unique_ptr<Decoder> const owner = make_model();
        Decoder& model = *owner;
        AdamW optimizer(model.segments(), model.layout().total(), backend_, AdamWConfig{});
        std::vector<Batch> const passes =
            micro_batches(Batch{B, T, tokens_.data(), targets_.data(), mask_.data()}, micro_batch);
        StepResult const step = train_step(model, optimizer, passes, 1e-3f);
        EXPECT_EQ(step.loss, 0.0f);
        EXPECT_EQ(step.grad_norm, 0.0);
        EXPECT_TRUE(step.updated);
        EXPECT_EQ(eval_step(model, passes), 0.0f);
    }
}

}  // namespace
}  // namespace axonn
