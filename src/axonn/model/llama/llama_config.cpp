#include "axonn/model/llama/llama_config.h"

#include "axonn/core/error.h"

#include <fmt/ranges.h>

#include <array>
#include <cmath>

namespace axonn {
namespace {

struct Preset {
    char const* name;
    int vocab_size, hidden_size, intermediate_size, layers, heads, kv_heads, context;
    double rope_theta;
    std::optional<RopeScaling> scaling;
};

// Llama 3.1's shapes as its config.json files give them: rope_theta 500000, Llama 3 scaling (factor 8, low 1,
// high 4, original context 8192), rms_norm_eps 1e-5, a context of 131072.
constexpr RopeScaling llama31_scaling{8.0, 1.0, 4.0, 8192};
std::array<Preset, 4> const presets = {{
    {"llama-tiny", 256, 64, 176, 2, 8, 2, 128, 10000.0, RopeScaling{8.0, 1.0, 4.0, 32}},
    {"llama3.1-8b", 128256, 4096, 14336, 32, 32, 8, 131072, 500000.0, llama31_scaling},
    {"llama3.1-70b", 128256, 8192, 28672, 80, 64, 8, 131072, 500000.0, llama31_scaling},
    {"llama3.1-405b", 128256, 16384, 53248, 126, 128, 8, 131072, 500000.0, llama31_scaling},
}};

}  // namespace

std::int64_t LlamaConfig::parameter_count() const {
    std::int64_t const C = hidden_size, F = intermediate_size, L = num_hidden_layers, V = vocab_size;
    std::int64_t const kv = static_cast<std::int64_t>(num_key_value_heads) * head_size();
    std::int64_t const layer = C * C + 2 * kv * C + C * C + 3 * C * F + 2 * C;  // q, k and v, o, the MLP, 2 norms
    return 2 * V * C + L * layer + C;  // embedding and LM head, the layers, the final norm
}

void LlamaConfig::validate() const {
    auto const positive = [](int value, char const* field) {
        require(value > 0, "{} must be positive, got {}", field, value);
    };
    positive(vocab_size, "vocab_size");
    positive(hidden_size, "hidden_size");
    positive(intermediate_size, "intermediate_size");
    positive(num_hidden_layers, "num_hidden_layers");
    positive(num_attention_heads, "num_attention_heads");
    positive(num_key_value_heads, "num_key_value_heads");
    positive(max_position_embeddings, "max_position_embeddings");
    require(hidden_size % num_attention_heads == 0 && head_size() % 2 == 0,
            "hidden_size {} must split into num_attention_heads {} heads of an even size (rotary embeddings turn "
            "channels in pairs)", hidden_size, num_attention_heads);
    require(num_attention_heads % num_key_value_heads == 0,
            "num_key_value_heads {} must divide num_attention_heads {} (each key/value head serves a group of query "
            "heads)", num_key_value_heads, num_attention_heads);
    require(std::isfinite(rms_norm_eps) && rms_norm_eps > 0, "rms_norm_eps must be positive, got {}", rms_norm_eps);
    require(std::isfinite(rope_theta) && rope_theta > 1, "rope_theta must be above 1, got {}", rope_theta);
    if (rope_scaling) {
        RopeScaling const& s = *rope_scaling;
        require(s.factor >= 1 && s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor &&
                    s.original_max_position > 0,
                "rope_scaling needs factor ≥ 1, 0 < low_freq_factor < high_freq_factor and a positive "
                "original_max_position_embeddings, got {}, {}, {}, {}", s.factor, s.low_freq_factor,
                s.high_freq_factor, s.original_max_position);
    }
}

LlamaConfig llama_preset(std::string const& name) {
    for (Preset const& p : presets) {
        if (name != p.name) continue;
        LlamaConfig config;
        config.name = p.name;
        config.vocab_size = p.vocab_size;
        config.hidden_size = p.hidden_size;
        config.intermediate_size = p.intermediate_size;
        config.num_hidden_layers = p.layers;
        config.num_attention_heads = p.heads;
        config.num_key_value_heads = p.kv_heads;
        config.max_position_embeddings = p.context;
        config.rope_theta = p.rope_theta;
        config.rope_scaling = p.scaling;
        return config;
    }
    fail("unknown Llama model '{}': use one of {}", name, fmt::join(llama_preset_names(), ", "));
}

std::vector<std::string> llama_preset_names() {
    std::vector<std::string> names;
    for (Preset const& p : presets) names.emplace_back(p.name);
    return names;
}

}  // namespace axonn
