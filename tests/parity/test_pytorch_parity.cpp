// The serial C++ model against an independent PyTorch twin (tests/reference/gpt2_reference.py, run by Debian's
// /usr/bin/python3 in float64). Both start from the same weights: this side writes them, PyTorch reads them.
// The config has awkward sizes on purpose: vocabulary 300 (padded to 320), width 72, 3 heads of 24, 2 layers,
// T = 17 in a context of 24, B = 3, with ignored targets and a non-binary loss mask.
//
// Tolerances. The oracle is float64, so they measure this side's fp32 rounding only. The issue asks for logits
// and loss within 1e-5 relative, gradients ‖Δ‖/‖g‖ ≤ 1e-5 and the 10 losses within 1e-4; measured errors are
// ≈3e-7, ≤8e-7 and ≤1e-7, so the bounds below are tightened to leave ~7× headroom and no more:
//   logits (norm-wise) and loss: 2e-6 relative; every gradient tensor: 5e-6; each of the 10 losses: 1e-5.
#include "axonn/core/rng.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/io/tensor_file.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/schedule.h"
#include "axonn/train/train_step.h"
#include "support/parity_model.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_pytorch_parity {

namespace fs = std::filesystem;

constexpr int batch_size = 3, seq_len = 17, optimizer_steps = 10;

using testing::parity_config;

LrSchedule parity_schedule() { return {1e-3f, 1e-4f, 3, optimizer_steps}; }
AdamWConfig parity_optimizer() { return {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f}; }

struct ParityBatch {
    std::vector<std::int32_t> tokens, targets;
    std::vector<float> loss_mask;
};

ParityBatch make_batch(int vocab) {
    ParityBatch batch;
    int const n = batch_size * seq_len;
    for (int i = 0; i < n; ++i) {
        batch.tokens.push_back(static_cast<std::int32_t>(philox4x32({99, 1}, i)[0] % vocab));
        batch.targets.push_back(static_cast<std::int32_t>(philox4x32({99, 2}, i)[0] % vocab));
        batch.loss_mask.push_back(1.0f);
    }
    batch.targets[0] = batch.targets[1] = batch.targets[40] = -1;  // ignored positions
    batch.loss_mask[5] = batch.loss_mask[23] = 0.0f;                // masked out (Goldfish-style)
    batch.loss_mask[30] = 0.5f;
    batch.loss_mask[31] = 2.0f;
    return batch;
}

Tensor tensor_from(std::span<float const> values, Shape shape) {
    Tensor tensor(std::move(shape), DType::f32);
    std::copy(values.begin(), values.end(), tensor.data<float>());
    return tensor;
}

template <typename T> Tensor int_tensor(std::vector<T> const& values, Shape shape) {
    Tensor tensor(std::move(shape), DType::i32);
    std::copy(values.begin(), values.end(), tensor.data<std::int32_t>());
    return tensor;
}

// weights.axt (every tensor by its name, in its serial shape) and batch.axt (tokens, targets, loss_mask), as the
// references read them.
void write_weights_and_batch(fs::path const& dir, Decoder const& model, ParityBatch const& batch) {
    NamedTensors weights;
    for (int id = 0; id < model.layout().count(); ++id) {
        ParamDecl const& spec = model.layout().param(id);
        weights.emplace(spec.name, tensor_from({model.param_values(id), static_cast<std::size_t>(shape_numel(spec.shape))},
                                               spec.shape));
    }
    write_tensor_file(dir / "weights.axt", weights);
    NamedTensors inputs;
    inputs.emplace("tokens", int_tensor(batch.tokens, {batch_size, seq_len}));
    inputs.emplace("targets", int_tensor(batch.targets, {batch_size, seq_len}));
    inputs.emplace("loss_mask", tensor_from(batch.loss_mask, {batch_size, seq_len}));
    write_tensor_file(dir / "batch.axt", inputs);
}

// The steps, schedule and AdamW settings of the twins' optimisation loop, as their config.json names them.
nlohmann::json optimizer_json() {
    LrSchedule const schedule = parity_schedule();
    AdamWConfig const optimizer = parity_optimizer();
    return {{"steps", optimizer_steps},     {"lr", schedule.max_lr},
            {"min_lr", schedule.min_lr},    {"warmup_steps", schedule.warmup_steps},
            {"weight_decay", optimizer.weight_decay}, {"beta1", optimizer.beta1},
            {"beta2", optimizer.beta2},     {"eps", optimizer.eps},
            {"grad_clip", optimizer.grad_clip}};
}

void write_inputs(fs::path const& dir, Decoder& model, ParityBatch const& batch) {
    Architecture const& config = model.architecture();
    nlohmann::json json = {{"vocab_size", config.vocab_size}, {"padded_vocab_size", config.padded_vocab},
                           {"n_layer", config.layers},        {"n_head", config.heads},
                           {"n_embd", config.width},          {"block_size", config.context}};
    json.update(optimizer_json());
    std::ofstream(dir / "config.json") << json.dump(2);
    write_weights_and_batch(dir, model, batch);
}

double relative_difference(float const* actual, Tensor const& expected) {
    double difference = 0.0, reference = 0.0;
    double const* e = expected.data<double>();
    for (std::int64_t i = 0; i < expected.numel(); ++i) {
        difference += (actual[i] - e[i]) * (actual[i] - e[i]);
        reference += e[i] * e[i];
    }
    return std::sqrt(difference / std::max(reference, 1e-300));
}

// Logits: the reference holds the V real columns; ours are padded to Vp.
double real_logits_error(Decoder const& model, NamedTensors const& reference) {
    int const V = model.architecture().vocab_size, Vp = model.architecture().padded_vocab;
    std::vector<float> real_logits;
    for (int row = 0; row < batch_size * seq_len; ++row) {
        real_logits.insert(real_logits.end(), model.logits() + row * Vp, model.logits() + row * Vp + V);
    }
    return relative_difference(real_logits.data(), reference.at("logits"));
}

// Ten AdamW steps on the same batch, through the trainer's own step function: each loss within 1e-5 of the twin's,
// and the first step's gradient norm within 5e-6.
void expect_adamw_steps_match(Decoder& model, Backend& backend, Batch const& view, NamedTensors const& reference) {
    AdamW optimizer(model.segments(), model.layout().total(), backend, parity_optimizer());
    LrSchedule const schedule = parity_schedule();
    double const* expected_losses = reference.at("losses").data<double>();
    for (int step = 0; step < optimizer_steps; ++step) {
        StepResult const result = train_step(model, optimizer, view, schedule.at(step));
        std::printf("step %d loss %.8f vs %.8f\n", step, result.loss, expected_losses[step]);
        EXPECT_NEAR(result.loss, expected_losses[step], 1e-5 * std::abs(expected_losses[step])) << "step " << step;
        if (step == 0) {
            EXPECT_NEAR(result.grad_norm, reference.at("grad_norm").data<double>()[0], 5e-6 * result.grad_norm);
        }
    }
}

class PytorchParity : public ::testing::Test {
protected:
    // `script` (gpt2_reference.py, or llama_reference.py --model) on the inputs written into dir_.
    NamedTensors run_reference(std::string const& script = "gpt2_reference.py") {
        std::string const command = std::string("/usr/bin/python3 ") + AXONN_SOURCE_DIR + "/tests/reference/" +
                                    script + " --input " + dir_.string() + " --output " +
                                    (dir_ / "reference.axt").string();
        int const status = std::system(command.c_str());
        if (status != 0) ADD_FAILURE() << "the PyTorch reference failed (" << command << "); run scripts/test, which installs python3-torch";
        return read_tensor_file(dir_ / "reference.axt");
    }

    testing::TempDir temp_dir_;
    fs::path const& dir_ = temp_dir_.path();
};

TEST_F(PytorchParity, LogitsLossGradientsAndTenAdamWSteps) {
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(parity_config(), backend, serial, batch_size, seq_len);
    model.init_weights(1234);
    ParityBatch const batch = make_batch(model.architecture().vocab_size);
    write_inputs(dir_, model, batch);
    NamedTensors const reference = run_reference();
    ASSERT_FALSE(HasFailure());

    Batch const view{batch_size, seq_len, batch.tokens.data(), batch.targets.data(), batch.loss_mask.data()};
    float const loss = model.train_forward(view);

    double const logits_error = real_logits_error(model, reference);
    double const expected_loss = reference.at("loss").data<double>()[0];
    std::printf("logits rel diff %.3e, loss %.8f vs %.8f\n", logits_error, loss, expected_loss);
    EXPECT_LT(logits_error, 2e-6);
    EXPECT_NEAR(loss, expected_loss, 2e-6 * std::abs(expected_loss));

    model.backward();
    for (int id = 0; id < param_count; ++id) {
        ParamDecl const& spec = model.layout().param(id);
        double const error = relative_difference(model.grad(Param{id}), reference.at("grad." + spec.name));
        std::printf("grad %-9s rel diff %.3e\n", spec.name.c_str(), error);
        EXPECT_LT(error, 5e-6) << "gradient of " << spec.name;
    }

    expect_adamw_steps_match(model, backend, view, reference);
}

// Llama (families/llama/) against its float64 twin written from Hugging Face's modeling_llama: RMSNorm, rotary
// embeddings with Llama 3's scaling, grouped-query attention, SwiGLU and the untied LM head, on the same batch.
// Norm gains are drawn around 1 rather than left at 1, so that their gradients and use are checked too; then ten
// AdamW steps on the same batch. Tolerances as GPT-2's above (the same kernels' fp32 rounding).
TEST_F(PytorchParity, LlamaLogitsLossGradientsAndTenAdamWSteps) {
    LlamaConfig const config = testing::parity_llama_config();
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(decoder_architecture(config), backend, serial, batch_size, seq_len);
    model.init_weights(4321);
    for (LlamaParam norm : {LlamaParam::ln1w, LlamaParam::ln2w, LlamaParam::lnfw}) {
        float* gains = model.param(norm);
        for (std::int64_t i = 0; i < model.layout().local_numel(norm); ++i) {
            gains[i] = static_cast<float>(1.0 + 0.1 * standard_normal({5, static_cast<std::uint64_t>(norm)}, i));
        }
    }
    ParityBatch const batch = make_batch(config.vocab_size);
    nlohmann::json hf_config = {{"vocab_size", config.vocab_size}, {"hidden_size", config.hidden_size},
                                {"intermediate_size", config.intermediate_size},
                                {"num_hidden_layers", config.num_hidden_layers},
                                {"num_attention_heads", config.num_attention_heads},
                                {"num_key_value_heads", config.num_key_value_heads},
                                {"rms_norm_eps", config.rms_norm_eps}, {"rope_theta", config.rope_theta}};
    hf_config.update(optimizer_json());
    hf_config["rope_scaling"] = {{"factor", config.rope_scaling->factor},
                                 {"low_freq_factor", config.rope_scaling->low_freq_factor},
                                 {"high_freq_factor", config.rope_scaling->high_freq_factor},
                                 {"original_max_position_embeddings", config.rope_scaling->original_max_position}};
    std::ofstream(dir_ / "config.json") << hf_config.dump(2);
    write_weights_and_batch(dir_, model, batch);
    NamedTensors const reference = run_reference("llama_reference.py --model");
    ASSERT_FALSE(HasFailure());

    Batch const view{batch_size, seq_len, batch.tokens.data(), batch.targets.data(), batch.loss_mask.data()};
    float const loss = model.train_forward(view);
    double const logits_error = real_logits_error(model, reference);
    double const expected_loss = reference.at("loss").data<double>()[0];
    std::printf("llama logits rel diff %.3e, loss %.8f vs %.8f\n", logits_error, loss, expected_loss);
    EXPECT_LT(logits_error, 2e-6);
    EXPECT_NEAR(loss, expected_loss, 2e-6 * std::abs(expected_loss));
    model.backward();
    for (int id = 0; id < model.layout().count(); ++id) {
        std::string const& name = model.layout().param(id).name;
        double const error = relative_difference(model.grad(id), reference.at("grad." + name));
        std::printf("llama grad %-9s rel diff %.3e\n", name.c_str(), error);
        EXPECT_LT(error, 5e-6) << "gradient of " << name;
    }
    expect_adamw_steps_match(model, backend, view, reference);
}

}  // namespace test_pytorch_parity
}  // namespace axonn
