#include "axonn/model/model_config.h"

#include "axonn/model/gpt_parameters.h"
#include "axonn/model/llama/llama_parameters.h"

#include "axonn/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace axonn {

std::string const& ModelConfig::name() const {
    return std::visit([](auto const& config) -> std::string const& { return config.name; }, shape_);
}

int ModelConfig::vocab_size() const {
    return std::visit([](auto const& config) { return config.vocab_size; }, shape_);
}

int ModelConfig::padded_vocab_size() const {
    return std::visit([](auto const& config) { return config.padded_vocab_size(); }, shape_);
}

int ModelConfig::context() const { return gpt() ? gpt()->max_seq : llama()->max_position_embeddings; }

void ModelConfig::set_vocab_size(int vocab_size) {
    std::visit([vocab_size](auto& config) { config.vocab_size = vocab_size; }, shape_);
}

std::int64_t ModelConfig::parameter_count() const {
    return std::visit([](auto const& config) { return config.parameter_count(); }, shape_);
}

void ModelConfig::validate() const {
    std::visit([](auto const& config) { config.validate(); }, shape_);
}

Architecture ModelConfig::architecture() const {
    return gpt() ? gpt2_architecture(*gpt()) : llama_architecture(*llama());
}

Architecture ModelConfig::validated_architecture() const {
    validate();
    return architecture();
}

std::string ModelConfig::summary() const {
    Architecture const a = architecture();
    std::string const heads =
        a.kv_heads == a.heads ? fmt::format("{} heads", a.heads)
                              : fmt::format("{} heads ({} key/value)", a.heads, a.kv_heads);
    return fmt::format("{} ({}): {} layers, width {}, {}, MLP {}, context {}, vocabulary {} (padded {})", name(),
                       family(), a.layers, a.width, heads, a.mlp_width, a.context, a.vocab_size, a.padded_vocab);
}

ModelConfig model_preset(std::string const& name) {
    std::vector<std::string> const gpt = gpt_preset_names(), llama = llama_preset_names();
    if (std::find(gpt.begin(), gpt.end(), name) != gpt.end()) return gpt_preset(name);
    if (std::find(llama.begin(), llama.end(), name) != llama.end()) return llama_preset(name);
    fail("unknown model '{}': use one of {}, {}", name, fmt::join(gpt, ", "), fmt::join(llama, ", "));
}

std::string model_differences(ModelConfig const& stored, ModelConfig const& expected) {
    if (stored.family() != expected.family()) {
        return fmt::format("family {} (here {})", stored.family(), expected.family());
    }
    Architecture const a = stored.architecture(), b = expected.architecture();
    std::string differences;
    auto const compare = [&](char const* what, auto const& x, auto const& y) {
        if (x != y) differences += fmt::format("{}{} {} (here {})", differences.empty() ? "" : ", ", what, x, y);
    };
    compare("vocabulary", a.vocab_size, b.vocab_size);
    compare("layers", a.layers, b.layers);
    compare("heads", a.heads, b.heads);
    compare("key/value heads", a.kv_heads, b.kv_heads);
    compare("width", a.width, b.width);
    compare("MLP width", a.mlp_width, b.mlp_width);
    compare("context", a.context, b.context);
    compare("norm epsilon", a.norm_eps, b.norm_eps);
    if (a.rope_inv_freq != b.rope_inv_freq) {
        differences += fmt::format("{}rotary frequencies (rope_theta or rope_scaling)",
                                   differences.empty() ? "" : ", ");
    }
    return differences;
}

}  // namespace axonn
