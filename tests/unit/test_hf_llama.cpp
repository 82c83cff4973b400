// Hugging Face Llama weights (families/llama/hf_llama.h) from a folder axonn exported itself: a micro Llama's random
// weights (vocabulary 300 padded to 320) saved serially as a checkpoint and exported in F32.
//   - The export reads back as the checkpoint's weights, bit for bit, the vocabulary's padding rows as zeros (they
//     are not stored), and its config.json as the same model.
//   - Weights that do not fit the config are refused on opening, before anything is read, with one line that names
//     the tensor: one missing, one of another shape (the same number of elements), one of a layer past the
//     config's layers, one of a type axonn does not read; and `axonn import` ends with that line and status 1.
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/checkpoint/hf_export.h"
#include "axonn/core/file_io.h"
#include "axonn/core/rng.h"
#include "axonn/families/llama/hf_llama.h"
#include "axonn/families/llama/hf_llama_config.h"
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/io/safetensors.h"
#include "support/error_of.h"
#include "support/micro_model.h"
#include "support/stored_tensors.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

using testing::read_tensors;
using testing::StoredTensor;
using testing::write_tensors;

class HfLlama : public ::testing::Test {
protected:
    void SetUp() override {
        fill_normal(params_, {77, 1}, 0, 0.0f, 0.05f);
        CheckpointReader checkpoint(save_checkpoint(grid_, config_, {params_, {}, {}}, 0, nullptr, {dir() / "ckpt"}));
        export_hf(checkpoint, dir() / "good", DType::f32);
    }
    fs::path const& dir() const { return temp_dir_.path(); }

    testing::TempDir temp_dir_;
    LlamaConfig const config_ = testing::micro_llama();
    ProcessGrid grid_{MPI_COMM_SELF, GridShape{}};
    ShardLayout const layout_{llama_parameters(config_), GridPosition::of(grid_)};
    std::vector<float> params_ = std::vector<float>(static_cast<std::size_t>(layout_.total()));
};

TEST_F(HfLlama, AnExportReadsBackAsItsCheckpoint) {
    LlamaConfig const read = read_hf_llama_config(dir() / "good");
    EXPECT_EQ(read.parameter_count(), config_.parameter_count());
    EXPECT_EQ(decoder_architecture(read).rope_inv_freq, decoder_architecture(config_).rope_inv_freq);
    std::vector<float> loaded(params_.size(), -1.0f);
    HfLlamaWeights(dir() / "good", read).read_local(layout_, loaded);
    std::vector<float> expected = params_;
    for (LlamaParam vocabulary : {LlamaParam::embed, LlamaParam::lm_head}) {
        std::int64_t const real = static_cast<std::int64_t>(config_.vocab_size) * config_.hidden_size;
        for (std::int64_t i = 0; i < layout_.local_numel(vocabulary); ++i) {
            if (layout_.serial_index(vocabulary, i) >= real) expected[layout_.offset(vocabulary) + i] = 0.0f;
        }
    }
    EXPECT_TRUE(loaded == expected);
}

struct BrokenWeights {
    char const* name;
    std::function<void(std::vector<StoredTensor>&)> damage;
    char const* expected;
};

StoredTensor& tensor_named(std::vector<StoredTensor>& tensors, std::string const& name) {
    for (StoredTensor& tensor : tensors) {
        if (tensor.entry.name == name) return tensor;
    }
    throw std::runtime_error("no tensor " + name);
}

// The rotary frequencies transformers has saved, in each attention or once in the model, are no weights: left alone.
TEST_F(HfLlama, SavedRotaryFrequenciesAreNotWeights) {
    fs::path const folder = dir() / "with_inv_freq";
    fs::create_directories(folder);
    fs::copy_file(dir() / "good" / "config.json", folder / "config.json");
    std::vector<StoredTensor> tensors = read_tensors(dir() / "good" / "model.safetensors");
    for (char const* name : {"model.rotary_emb.inv_freq", "model.layers.1.self_attn.rotary_emb.inv_freq"}) {
        StoredTensor extra = tensor_named(tensors, "model.norm.weight");
        extra.entry.name = name;
        tensors.push_back(extra);
    }
    write_tensors(folder / "model.safetensors", tensors);
    EXPECT_NO_THROW(HfLlamaWeights(folder, config_));
}

TEST_F(HfLlama, WeightsThatDoNotFitTheConfigAreRefusedByName) {
    std::vector<BrokenWeights> const cases = {
        {"missing_tensor",
         [](std::vector<StoredTensor>& t) {
             std::erase_if(t, [](StoredTensor const& s) { return s.entry.name == "model.layers.1.mlp.up_proj.weight"; });
         },
         "has no tensor model.layers.1.mlp.up_proj.weight: it is not a Llama of this config's 2 layers"},
        // The untied head missing was blamed on the number of layers, which was right.
        {"missing_head",
         [](std::vector<StoredTensor>& t) {
             std::erase_if(t, [](StoredTensor const& s) { return s.entry.name == "lm_head.weight"; });
         },
         "has no tensor lm_head.weight: its LM head, which a Llama axonn reads has apart from the embedding "
         "(tie_word_embeddings false, as its config.json says)"},
        {"mis_shaped_tensor",
         [](std::vector<StoredTensor>& t) { tensor_named(t, "model.layers.0.self_attn.k_proj.weight").entry.shape = {32, 32}; },
         "model.layers.0.self_attn.k_proj.weight has shape [32, 32], but its config.json asks for [16, 64]"},
        {"layer_beyond_the_config",  // a config.json that claims fewer layers than the weights hold
         [](std::vector<StoredTensor>& t) {
             StoredTensor extra = tensor_named(t, "model.layers.1.mlp.up_proj.weight");
             extra.entry.name = "model.layers.2.mlp.up_proj.weight";
             t.push_back(extra);
         },
         "model.layers.2.mlp.up_proj.weight is a weight of layer 2, but config.json says the model has 2 layers"},
        {"integer_tensor",
         [](std::vector<StoredTensor>& t) { tensor_named(t, "model.norm.weight").entry.dtype = DType::i32; },
         "model.norm.weight is I32; axonn reads F32, BF16 or F16 weights"},
        // A bias its config.json does not declare (attention_bias: true is refused): the import dropped it.
        {"undeclared_bias",
         [](std::vector<StoredTensor>& t) {
             StoredTensor extra = tensor_named(t, "model.norm.weight");
             extra.entry.name = "model.layers.0.self_attn.q_proj.bias";
             t.push_back(extra);
         },
         "model.layers.0.self_attn.q_proj.bias is no weight of a Llama as its config.json describes it: axonn "
         "would leave it out and run another model"},
    };
    for (BrokenWeights const& broken : cases) {
        SCOPED_TRACE(broken.name);
        fs::path const folder = dir() / broken.name;
        fs::create_directories(folder);
        fs::copy_file(dir() / "good" / "config.json", folder / "config.json");
        std::vector<StoredTensor> tensors = read_tensors(dir() / "good" / "model.safetensors");
        broken.damage(tensors);
        write_tensors(folder / "model.safetensors", tensors);
        std::string const error = error_of([&] { HfLlamaWeights(folder, config_); });
        EXPECT_NE(error.find(broken.expected), std::string::npos) << error;

        fs::path const err = folder / "stderr.txt";
        std::string const command = (fs::path(AXONN_BUILD_DIR) / "axonn").string() + " import " + folder.string() +
                                    " --out " + folder.string() + "_ckpt > /dev/null 2> " + err.string();
        int const status = std::system(command.c_str());
        EXPECT_EQ(WEXITSTATUS(status), 1);
        std::ifstream in(err);
        std::string const printed{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        EXPECT_NE(printed.find(broken.expected), std::string::npos) << printed;
        EXPECT_EQ(printed.find('\n'), printed.size() - 1) << "not one line: " << printed;
    }
}

}  // namespace
}  // namespace axonn
