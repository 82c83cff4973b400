#include "axonn/checkpoint/hf_model.h"

#include "axonn/checkpoint/hf_gpt2.h"
#include "axonn/checkpoint/hf_llama.h"
#include "axonn/checkpoint/hf_llama_config.h"

namespace axonn {

ModelConfig read_hf_model_config(std::filesystem::path const& dir) {
    if (is_hf_llama_folder(dir)) return read_hf_llama_config(dir);
    return read_hf_gpt2_config(dir);
}

void read_hf_weights(std::filesystem::path const& dir, ModelConfig const& model, ShardLayout const& layout,
                     std::span<float> params) {
    if (LlamaConfig const* llama = model.llama()) {
        HfLlamaWeights(dir, *llama).read_local(layout, params);
    } else {
        HfGpt2Weights(dir, *model.gpt()).read_local(layout, params);
    }
}

}  // namespace axonn
