// GPT-2 as axonn's registry sees it (families/registry.h): its presets, its fields in index.json, its Hugging Face
// folders (hf_gpt2.h).
#include "axonn/core/error.h"
#include "axonn/core/json_fields.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/gpt2/hf_gpt2.h"
#include "axonn/families/registry.h"

#include <limits>

namespace axonn {
namespace {

using nlohmann::json;

GptConfig const& gpt2_of(ModelConfig const& model) {
    GptConfig const* config = model.as<GptConfig>();
    AXONN_REQUIRE(config != nullptr, "{} is a {} model, not GPT-2", model.name(), model.family());
    return *config;
}

// {"name", "vocab_size", "padded_vocab_size", "n_layer", "n_head", "n_embd", "max_seq"}: no "family", as the
// indexes written before Llama.
json gpt2_index_json(ModelConfig const& model) {
    GptConfig const& config = gpt2_of(model);
    return {{"name", config.name},       {"vocab_size", config.vocab_size},
            {"padded_vocab_size", config.padded_vocab_size()}, {"n_layer", config.n_layer},
            {"n_head", config.n_head},   {"n_embd", config.n_embd},
            {"max_seq", config.max_seq}};
}

ModelConfig gpt2_from_index_json(json const& model) {
    constexpr int max_dimension = std::numeric_limits<int>::max();
    auto const dimension = [&](char const* key) {
        return static_cast<int>(json_integer(model, key, "model", 1, max_dimension));
    };
    GptConfig config;
    config.name = json_text(model, "name", "model");
    config.vocab_size = dimension("vocab_size");
    config.n_layer = dimension("n_layer");
    config.n_head = dimension("n_head");
    config.n_embd = dimension("n_embd");
    config.max_seq = dimension("max_seq");
    return config;
}

}  // namespace

ModelFamily const& gpt2_family() {
    static ModelFamily const family{
        .name = GptConfig::family,
        .label = "GPT-2",
        .hf_model_type = "gpt2",
        .hf_class = "GPT2LMHeadModel",
        .exports_bf16 = false,
        .preset_names = gpt_preset_names,
        .preset = [](std::string const& name) -> ModelConfig { return gpt_preset(name); },
        .index_json = gpt2_index_json,
        .from_index_json = gpt2_from_index_json,
        .read_hf_config = [](std::filesystem::path const& dir) -> ModelConfig { return read_hf_gpt2_config(dir); },
        .read_hf_weights =
            [](std::filesystem::path const& dir, ModelConfig const& model, ShardLayout const& layout,
               std::span<float> params) { HfGpt2Weights(dir, gpt2_of(model)).read_local(layout, params); },
        .check_hf_weights = [](std::filesystem::path const& dir,
                               ModelConfig const& model) { HfGpt2Weights const checked(dir, gpt2_of(model)); },
        .export_hf =
            [](ModelConfig const& model, ReadTensor const& read_tensor, std::filesystem::path const& out, DType dtype) {
                AXONN_REQUIRE(dtype == DType::f32, "a GPT-2 checkpoint is exported in f32 only");
                export_hf_gpt2(gpt2_of(model), read_tensor, out);
            },
    };
    return family;
}

}  // namespace axonn
