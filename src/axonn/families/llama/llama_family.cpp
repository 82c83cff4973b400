// Llama as axonn's registry sees it (families/registry.h): its presets, its fields in index.json (Hugging Face's
// config.json inside), its Hugging Face folders (hf_llama.h, hf_llama_config.h).
#include "axonn/core/error.h"
#include "axonn/core/json_fields.h"
#include "axonn/families/llama/hf_llama.h"
#include "axonn/families/llama/hf_llama_config.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/families/registry.h"

namespace axonn {
namespace {

using nlohmann::json;

LlamaConfig const& llama_of(ModelConfig const& model) {
    LlamaConfig const* config = model.as<LlamaConfig>();
    AXONN_REQUIRE(config != nullptr, "{} is a {} model, not Llama", model.name(), model.family());
    return *config;
}

// {"family": "llama", "name", "padded_vocab_size", "config": {Hugging Face's config.json}}
json llama_index_json(ModelConfig const& model) {
    LlamaConfig const& config = llama_of(model);
    return {{"family", LlamaConfig::family}, {"name", config.name}, {"padded_vocab_size", config.padded_vocab_size()},
            {"config", hf_llama_config_json(config, "float32")}};
}

ModelConfig llama_from_index_json(json const& model) {
    LlamaConfig config =
        parse_hf_llama_config(json_field(model, "config", "model").dump(), "the index's model config");
    config.name = json_text(model, "name", "model");
    return config;
}

}  // namespace

ModelFamily const& llama_family() {
    static ModelFamily const family{
        .name = LlamaConfig::family,
        .label = "Llama",
        .hf_model_type = "llama",
        .hf_class = "LlamaForCausalLM",
        .exports_bf16 = true,
        .preset_names = llama_preset_names,
        .preset = [](std::string const& name) -> ModelConfig { return llama_preset(name); },
        .index_json = llama_index_json,
        .from_index_json = llama_from_index_json,
        .read_hf_config = [](std::filesystem::path const& dir) -> ModelConfig { return read_hf_llama_config(dir); },
        .read_hf_weights =
            [](std::filesystem::path const& dir, ModelConfig const& model, ShardLayout const& layout,
               std::span<float> params) { HfLlamaWeights(dir, llama_of(model)).read_local(layout, params); },
        .check_hf_weights = [](std::filesystem::path const& dir,
                               ModelConfig const& model) { HfLlamaWeights const checked(dir, llama_of(model)); },
        .export_hf =
            [](ModelConfig const& model, ReadTensor const& read_tensor, std::filesystem::path const& out,
               DType dtype) { export_hf_llama(llama_of(model), read_tensor, out, dtype); },
    };
    return family;
}

}  // namespace axonn
