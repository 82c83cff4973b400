// The model's device path, run on the CPU: a backend whose buffers are a device's (support/simulated_device_backend.h)
// makes the model send each batch's ids, fetch the token losses and send their weights, draw its weights on the
// host and copy them over, and pass checkpoints through host copies (train/host_state.h), while its kernels stay
// the CPU's; with the LM head in chunks of rows too. Everything must equal the CPU backend's run bit for bit; a
// host read of a device buffer anywhere on the way throws (Tensor::span refuses it).
#include "axonn/core/error.h"
#include "axonn/model/decoder.h"
#include "axonn/train/host_state.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/simulated_device_backend.h"
#include "support/tiny_architectures.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace axonn {
namespace {

constexpr int rows = 4, seq = 16, steps = 3;

using testing::ArchitectureCase;

// A model, its optimizer and its backend, on the CPU's memory or the simulated device's.
struct TrainingRun {
    std::unique_ptr<CpuBackend> backend;
    ProcessGrid grid{MPI_COMM_SELF, GridShape{}};
    std::unique_ptr<Decoder> model;
    std::unique_ptr<AdamW> optimizer;

    // passes: 2, or 1 a step; logit_rows: the LM head in chunks of rows (0: all at once).
    TrainingRun(Architecture const& architecture, bool device, int passes = 2, int logit_rows = 0) {
        backend = device ? std::make_unique<testing::SimulatedDeviceBackend>() : std::make_unique<CpuBackend>();
        backend->set_gemm_tuning(false);
        model = std::make_unique<Decoder>(architecture, *backend, grid, rows / passes, seq,
                                          DecoderOptions{.logit_rows = logit_rows});
        model->init_weights(3);
        optimizer = std::make_unique<AdamW>(model->segments(), model->layout().total(), *backend, AdamWConfig{});
    }
};

// A batch with ignored targets and a loss mask, split into two passes.
struct Data {
    std::vector<std::int32_t> tokens, targets;
    std::vector<float> mask;
    std::vector<Batch> passes;

    explicit Data(int vocab, int pass_count = 2) : tokens(rows * seq), targets(tokens.size()), mask(tokens.size()) {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            tokens[i] = static_cast<std::int32_t>((i * 13) % vocab);
            targets[i] = i % 7 == 3 ? -1 : static_cast<std::int32_t>((i * 17) % vocab);
            mask[i] = i % 5 == 0 ? 0.0f : 1.0f;
        }
        passes = micro_batches({rows, seq, tokens.data(), targets.data(), mask.data()}, rows / pass_count);
    }
};

std::vector<float> parameters_of(Decoder const& model) {
    std::vector<float> values(static_cast<std::size_t>(model.layout().total()));
    model.copy_parameters_to_host(values);
    return values;
}

class DevicePath : public ::testing::TestWithParam<ArchitectureCase> {};

TEST_P(DevicePath, TrainsAsTheCpuBackendDoesBitForBit) {
    Architecture const architecture = GetParam().architecture();
    Data const data(architecture.vocab_size);
    TrainingRun host(architecture, false), device(architecture, true);
    ASSERT_EQ(device.backend->memory(), Memory::device);
    EXPECT_EQ(parameters_of(*device.model), parameters_of(*host.model));
    for (int step = 0; step < steps; ++step) {
        StepResult const on_host = train_step(*host.model, *host.optimizer, data.passes, 1e-3f);
        StepResult const on_device = train_step(*device.model, *device.optimizer, data.passes, 1e-3f);
        EXPECT_EQ(on_device.loss, on_host.loss) << "step " << step;
        EXPECT_EQ(on_device.grad_norm, on_host.grad_norm) << "step " << step;
        ASSERT_TRUE(on_host.masked && on_device.masked);
        EXPECT_EQ(on_device.masked->kept_targets, on_host.masked->kept_targets) << "step " << step;
    }
    EXPECT_EQ(parameters_of(*device.model), parameters_of(*host.model));
    // A validation pass, and the losses it leaves for the host.
    EXPECT_EQ(eval_step(*device.model, data.passes), eval_step(*host.model, data.passes));
    std::int64_t const last_pass = static_cast<std::int64_t>(rows / 2) * seq;
    std::vector<float> const host_losses(host.model->token_losses(), host.model->token_losses() + last_pass);
    EXPECT_EQ(std::vector<float>(device.model->token_losses(), device.model->token_losses() + last_pass), host_losses);
}

// The LM head in chunks of 5 rows (7 of them a pass): in one pass a step, each token's share of the loss goes to
// the device before the first chunk's backward; in two, the step's total weight sets it. Bit for bit again.
TEST_P(DevicePath, TrainsAsTheCpuBackendDoesWithTheLmHeadInChunks) {
    Architecture const architecture = GetParam().architecture();
    for (int const passes : {1, 2}) {
        Data const data(architecture.vocab_size, passes);
        TrainingRun host(architecture, false, passes, 5), device(architecture, true, passes, 5);
        for (int step = 0; step < steps; ++step) {
            StepResult const on_host = train_step(*host.model, *host.optimizer, data.passes, 1e-3f);
            StepResult const on_device = train_step(*device.model, *device.optimizer, data.passes, 1e-3f);
            EXPECT_EQ(on_device.loss, on_host.loss) << passes << " passes, step " << step;
            EXPECT_EQ(on_device.grad_norm, on_host.grad_norm) << passes << " passes, step " << step;
        }
        EXPECT_EQ(parameters_of(*device.model), parameters_of(*host.model)) << passes << " passes";
        EXPECT_EQ(eval_step(*device.model, data.passes), eval_step(*host.model, data.passes)) << passes << " passes";
    }
}

TEST_P(DevicePath, CheckpointStatePassesThroughHostCopies) {
    Architecture const architecture = GetParam().architecture();
    Data const data(architecture.vocab_size);
    TrainingRun host(architecture, false), device(architecture, true);
    for (int step = 0; step < steps; ++step) {
        train_step(*host.model, *host.optimizer, data.passes, 1e-3f);
        train_step(*device.model, *device.optimizer, data.passes, 1e-3f);
    }
    HostState const saved_on_host = HostState::read(*host.model, host.optimizer.get());
    HostState const saved_on_device = HostState::read(*device.model, device.optimizer.get());
    auto const values = [](std::span<float const> s) { return std::vector<float>(s.begin(), s.end()); };
    EXPECT_EQ(values(saved_on_device.tensors().params), values(saved_on_host.tensors().params));
    EXPECT_EQ(values(saved_on_device.tensors().exp_avg), values(saved_on_host.tensors().exp_avg));
    EXPECT_EQ(values(saved_on_device.tensors().exp_avg_sq), values(saved_on_host.tensors().exp_avg_sq));

    // Restored into a fresh device model, the host's state trains on as the host model does.
    TrainingRun restored(architecture, true);
    HostState::write(*restored.model, restored.optimizer.get(), [&](LocalBuffers const& out) {
        std::ranges::copy(saved_on_host.tensors().params, out.params.begin());
        std::ranges::copy(saved_on_host.tensors().exp_avg, out.exp_avg.begin());
        std::ranges::copy(saved_on_host.tensors().exp_avg_sq, out.exp_avg_sq.begin());
    });
    restored.optimizer->restore_steps_taken(host.optimizer->steps_taken());
    StepResult const next_on_host = train_step(*host.model, *host.optimizer, data.passes, 1e-3f);
    StepResult const next_restored = train_step(*restored.model, *restored.optimizer, data.passes, 1e-3f);
    EXPECT_EQ(next_restored.loss, next_on_host.loss);
    EXPECT_EQ(parameters_of(*restored.model), parameters_of(*host.model));
}

TEST(DevicePath, TheHostCannotReadADeviceTensor) {
    testing::SimulatedDeviceBackend const backend;
    Tensor const on_device({8}, DType::f32, Memory::device);
    EXPECT_THROW((void)on_device.span<float>(), InternalError);
}

INSTANTIATE_TEST_SUITE_P(Families, DevicePath,
                         ::testing::Values(ArchitectureCase{"gpt2_tiny", testing::tiny_gpt2},
                                           ArchitectureCase{"llama_tiny", testing::tiny_llama}),
                         [](auto const& info) { return info.param.name; });

}  // namespace
}  // namespace axonn
