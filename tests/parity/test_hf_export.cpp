// `axonn export --format hf` against the PyTorch twin: a serial model with every weight random (biases and
// LayerNorms too, so that a misplaced transpose or a swapped bias cannot hide behind zeros and ones), saved as a
// checkpoint and exported; tests/reference/hf_gpt2_logits.py reads the Hugging Face folder with its own
// safetensors parser, undoes the Conv1D layout and runs the twin in float64. The bound: logits within
// 1e-5 relative (norm-wise over the real vocabulary's columns); fp32 rounding alone measures 2.4e-7.
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/checkpoint/hf_export.h"
#include "axonn/core/rng.h"
#include "axonn/families/gpt2/hf_gpt2.h"
#include "axonn/io/tensor_file.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "support/parity_model.h"
#include "support/temp_dir.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_hf_export {

namespace fs = std::filesystem;

TEST(HuggingFaceExport, LogitsOfTheExportInPyTorchMatchAxonns) {
    testing::TempDir dir;
    GptConfig const config = testing::parity_config();
    constexpr int B = 2, T = 17;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(config, backend, serial, B, T);
    fill_normal(model.params(), {2024, 1}, 0, 0.0f, 0.1f);

    save_checkpoint(serial, config, {model.param_values(), {}, {}}, 0, nullptr, {dir / "ckpt"});
    CheckpointReader checkpoint(dir / "ckpt" / "step_00000000");
    export_hf(checkpoint, dir / "hf");

    std::vector<std::int32_t> tokens(B * T);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>(philox4x32({5, 5}, i)[0] % config.vocab_size);
    }
    Tensor token_tensor({B, T}, DType::i32);
    std::copy(tokens.begin(), tokens.end(), token_tensor.data<std::int32_t>());
    NamedTensors inputs;
    inputs.emplace("tokens", std::move(token_tensor));
    write_tensor_file(dir / "tokens.axt", inputs);
    std::string const command = std::string("/usr/bin/python3 ") + AXONN_SOURCE_DIR +
                                "/tests/reference/hf_gpt2_logits.py --model " + (dir / "hf").string() + " --tokens " +
                                (dir / "tokens.axt").string() + " --output " + (dir / "logits.axt").string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    NamedTensors const outputs = read_tensor_file(dir / "logits.axt");
    Tensor const& expected = outputs.at("logits");
    ASSERT_EQ(expected.shape(), (Shape{B, T, config.vocab_size}));

    model.forward({B, T, tokens.data(), nullptr, nullptr});
    int const Vp = config.padded_vocab_size(), V = config.vocab_size;
    double difference = 0, reference = 0;
    for (std::int64_t row = 0; row < B * T; ++row) {
        for (int v = 0; v < V; ++v) {
            double const e = expected.data<double>()[row * V + v];
            difference += std::pow(model.logits()[row * Vp + v] - e, 2);
            reference += e * e;
        }
    }
    double const relative = std::sqrt(difference / reference);
    RecordProperty("logits_relative_difference", fmt::format("{:.2e}", relative));
    EXPECT_LT(relative, 1e-5);
}

}  // namespace test_hf_export
}  // namespace axonn
