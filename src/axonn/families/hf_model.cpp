#include "axonn/families/hf_model.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/families/registry.h"
#include "axonn/io/hf_safetensors.h"

#include <nlohmann/json.hpp>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// config.json's model_type; empty where the file cannot be read as a config (the family's reader, or the first
// family's, then says what is wrong with it).
std::string hf_model_type(fs::path const& dir) {
    try {
        nlohmann::json const config = nlohmann::json::parse(
            read_input_file(dir / hf_config_file, "Hugging Face config", "", std::uint64_t{1} << 20), nullptr, false);
        return config.is_object() ? config.value("model_type", std::string()) : std::string();
    } catch (Error const&) {
        return {};
    } catch (nlohmann::json::exception const&) {
        return {};  // a model_type that is not a string
    }
}

}  // namespace

ModelConfig read_hf_model_config(fs::path const& dir) {
    require_hf_weights_beside_config(dir);
    if (is_hf_model_folder(dir)) {
        std::string const model_type = hf_model_type(dir);
        for (ModelFamily const* family : model_families()) {
            if (model_type.empty() || family->hf_model_type != model_type) continue;
            // The weights as config.json says, before anything trusts its sizes (a vocab_size that the weights do
            // not have would otherwise be blamed on the tokenizer).
            ModelConfig const config = family->read_hf_config(dir);
            family->check_hf_weights(dir, config);
            return config;
        }
    }
    return model_families().front()->read_hf_config(dir);
}

void read_hf_weights(fs::path const& dir, ModelConfig const& model, ShardLayout const& layout,
                     std::span<float> params) {
    family_of(model).read_hf_weights(dir, model, layout, params);
}

}  // namespace axonn
