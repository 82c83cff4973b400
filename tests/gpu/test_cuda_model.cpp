// The whole model on the GPU against the CPU, GPT-2 and Llama: from the same weights (the counter-based
// initialisation) on the same batch, the loss, the logits and each parameter's gradient, tensor by tensor (a wrong
// small tensor would hide in a norm over all of them), of one forward and backward, then the losses of ten AdamW
// steps.
//
// Tolerances, norm-wise relative. fp32: 1e-5 for the loss, logits and gradients, 1e-4 for the tenth step's loss
// (the two backends differ only in summation order and exp/tanh, ~1e-7 per operation, which ten updates carry
// forward). bf16: the CPU's bf16 model (its GEMMs native, or emulated where the CPU has none); the GPU's attention
// runs on the tensor cores for heads of 64 channels (computing in fp32 for other heads, where the CPU rounds its
// tile GEMMs to bf16), so the bf16 model tests' tolerances hold (logits and loss 1e-2, gradients 2e-2: a few bf16
// roundings, compounded by the backward).
//
// Skipped, and counted as skipped, where no CUDA GPU is visible.
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/kernels/backend.h"
#include "axonn/kernels/cuda/gpu_choice.h"
#include "axonn/model/decoder.h"
#include "axonn/parallel/device_communication.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"

#include "support/relative_difference.h"
#include "support/tiny_architectures.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace axonn {
namespace {

constexpr int batch_rows = 2, seq = 16, adamw_steps = 10;

using testing::ArchitectureCase;

// Two heads of 64 channels: in bf16 its attention runs on the tensor cores.
Architecture tiny_gpt2_wide_heads() {
    GptConfig config = gpt_preset("gpt2-tiny");
    config.vocab_size = 100;
    config.n_head = 2;
    return decoder_architecture(config);
}

struct Outcome {
    float loss = 0;
    std::vector<float> logits;
    std::vector<std::pair<std::string, std::vector<float>>> grads;  // each parameter's, by name
    std::vector<float> step_losses;
};

// The backend's buffer of `n` floats at `data`, read back to the host.
std::vector<float> to_host(Backend& backend, float const* data, std::int64_t n) {
    std::vector<float> host(static_cast<std::size_t>(n));
    backend.copy_to_host(host.data(), data, n * static_cast<std::int64_t>(sizeof(float)));
    return host;
}

Outcome run(Architecture const& architecture, std::string const& backend_name, DType precision) {
    StepOptions options;
    options.backend = backend_name;
    options.model.precision = precision;
    options.gemm_tuning = false;  // one way for every GEMM, so that the comparison is of the backends alone
    std::unique_ptr<Backend> backend = make_step_backend(options, false);
    // As `axonn train` makes it: the grid's collectives of device buffers go through NCCL (here groups of one).
    ProcessGrid serial(MPI_COMM_SELF, GridShape{}, {Axis::x, Axis::y, Axis::z, Axis::data},
                       CommOptions{.device = device_communication(*backend)});
    Decoder model(architecture, *backend, serial, batch_rows, seq, options.model);
    model.init_weights(3);
    std::vector<std::int32_t> tokens(batch_rows * seq), targets(tokens.size());
    int const vocab = architecture.vocab_size;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>((i * 13) % vocab);
        targets[i] = static_cast<std::int32_t>((i * 17) % vocab);
    }
    Batch const batch{batch_rows, seq, tokens.data(), targets.data(), nullptr};

    Outcome outcome;
    outcome.loss = model.train_forward(batch);
    outcome.logits = to_host(*backend, model.logits(),
                             static_cast<std::int64_t>(batch_rows) * seq * architecture.padded_vocab);
    model.backward();
    for (int id = 0; id < model.layout().count(); ++id) {
        outcome.grads.emplace_back(model.layout().param(id).name,
                                   to_host(*backend, model.grad(id), model.layout().local_numel(id)));
    }
    AdamW optimizer(model.segments(), model.layout().total(), *backend, AdamWConfig{});
    for (int step = 0; step < adamw_steps; ++step) {
        StepResult const result = train_step(model, optimizer, {&batch, 1}, 1e-3f);
        EXPECT_TRUE(result.updated) << "step " << step;
        outcome.step_losses.push_back(result.loss);
    }
    return outcome;
}

class CudaModelAgainstCpu : public ::testing::TestWithParam<std::tuple<ArchitectureCase, DType>> {};

TEST_P(CudaModelAgainstCpu, SameLossLogitsGradientsAndSteps) {
    if (!cuda::device_present()) GTEST_SKIP() << "no CUDA GPU visible";
    auto const& [model_case, precision] = GetParam();
    Architecture const architecture = model_case.architecture();
    Outcome const cpu = run(architecture, "cpu", precision);
    Outcome const gpu = run(architecture, "cuda", precision);
    bool const bf16 = precision == DType::bf16;
    double const value_tolerance = bf16 ? 1e-2 : 1e-5, grad_tolerance = bf16 ? 2e-2 : 1e-5;
    EXPECT_NEAR(gpu.loss, cpu.loss, value_tolerance * cpu.loss);
    EXPECT_LE(testing::relative_difference(gpu.logits, cpu.logits), value_tolerance);
    ASSERT_EQ(gpu.grads.size(), cpu.grads.size());
    for (std::size_t t = 0; t < cpu.grads.size(); ++t) {
        EXPECT_LE(testing::relative_difference(gpu.grads[t].second, cpu.grads[t].second), grad_tolerance)
            << "gradient of " << cpu.grads[t].first;
    }
    ASSERT_EQ(gpu.step_losses.size(), cpu.step_losses.size());
    double const step_tolerance = bf16 ? 2e-2 : 1e-4;
    EXPECT_NEAR(gpu.step_losses.back(), cpu.step_losses.back(), step_tolerance * cpu.step_losses.back());
    EXPECT_LT(gpu.step_losses.back(), gpu.step_losses.front()) << "ten steps on one batch must lower its loss";
}

INSTANTIATE_TEST_SUITE_P(Models, CudaModelAgainstCpu,
                         ::testing::Combine(::testing::Values(ArchitectureCase{"gpt2_tiny", testing::tiny_gpt2},
                                                              ArchitectureCase{"gpt2_tiny_wide_heads",
                                                                               tiny_gpt2_wide_heads},
                                                              ArchitectureCase{"llama_tiny", testing::tiny_llama}),
                                            ::testing::Values(DType::f32, DType::bf16)),
                         [](auto const& info) {
                             return std::get<0>(info.param).name + "_" + precision_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace axonn
