#include "axonn/families/llama/llama_config.h"

#include "axonn/core/error.h"

#include <fmt/ranges.h>

#include <cmath>

namespace axonn {
namespace {

// Llama 3.1's shapes as its config.json files give them: rope_theta 500000, Llama 3 scaling (factor 8, low 1,
// high 4, original context 8192), rms_norm_eps 1e-5, a context of 131072.
std::vector<LlamaConfig> const& llama_presets() {
    static std::vector<LlamaConfig> const table = {
        {.name = "llama-tiny", .vocab_size = 256, .hidden_size = 64, .intermediate_size = 176,
         .num_hidden_layers = 2, .num_attention_heads = 8, .num_key_value_heads = 2, .max_position_embeddings = 128,
         .rope_theta = 10000.0, .rope_scaling = RopeScaling{8.0, 1.0, 4.0, 32}},
        {.name = "llama3.1-8b", .hidden_size = 4096, .intermediate_size = 14336, .num_hidden_layers = 32,
         .num_attention_heads = 32, .num_key_value_heads = 8},
        {.name = "llama3.1-70b", .hidden_size = 8192, .intermediate_size = 28672, .num_hidden_layers = 80,
         .num_attention_heads = 64, .num_key_value_heads = 8},
        {.name = "llama3.1-405b", .hidden_size = 16384, .intermediate_size = 53248, .num_hidden_layers = 126,
         .num_attention_heads = 128, .num_key_value_heads = 8},
    };
    return table;
}

}  // namespace

std::int64_t LlamaConfig::parameter_count() const {
    std::int64_t const C = hidden_size, F = intermediate_size, L = num_hidden_layers, V = vocab_size;
    std::int64_t const kv = static_cast<std::int64_t>(num_key_value_heads) * head_size();
    std::int64_t const layer = C * C + 2 * kv * C + C * C + 3 * C * F + 2 * C;  // q, k and v, o, the MLP, 2 norms
    return 2 * V * C + L * layer + C;  // embedding and LM head, the layers, the final norm
}

void LlamaConfig::validate() const {
    auto const positive = [](int value, char const* field) {
        AXONN_REQUIRE(value > 0, "{} must be positive, got {}", field, value);
    };
    positive(vocab_size, "vocab_size");
    positive(hidden_size, "hidden_size");
    positive(intermediate_size, "intermediate_size");
    positive(num_hidden_layers, "num_hidden_layers");
    positive(num_attention_heads, "num_attention_heads");
    positive(num_key_value_heads, "num_key_value_heads");
    positive(max_position_embeddings, "max_position_embeddings");
    AXONN_REQUIRE(hidden_size % num_attention_heads == 0 && head_size() % 2 == 0,
                  "hidden_size {} must split into num_attention_heads {} heads of an even size (rotary embeddings turn "
                  "channels in pairs)",
                  hidden_size, num_attention_heads);
    AXONN_REQUIRE(
        num_attention_heads % num_key_value_heads == 0,
        "num_key_value_heads {} must divide num_attention_heads {} (each key/value head serves a group of query "
        "heads)",
        num_key_value_heads, num_attention_heads);
    AXONN_REQUIRE(std::isfinite(rms_norm_eps) && rms_norm_eps > 0, "rms_norm_eps must be positive, got {}",
                  rms_norm_eps);
    AXONN_REQUIRE(std::isfinite(rope_theta) && rope_theta > 1, "rope_theta must be above 1, got {}", rope_theta);
    if (rope_scaling) {
        RopeScaling const& s = *rope_scaling;
        AXONN_REQUIRE(s.factor >= 1 && s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor &&
                          s.original_max_position > 0,
                      "rope_scaling needs factor ≥ 1, 0 < low_freq_factor < high_freq_factor and a positive "
                      "original_max_position_embeddings, got {}, {}, {}, {}",
                      s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position);
    }
}

LlamaConfig llama_preset(std::string const& name) {
    for (LlamaConfig const& preset : llama_presets()) {
        if (preset.name == name) return preset;
    }
    fail("unknown Llama model '{}': use one of {}", name, fmt::join(llama_preset_names(), ", "));
}

std::vector<std::string> llama_preset_names() {
    std::vector<std::string> names;
    for (LlamaConfig const& preset : llama_presets()) names.push_back(preset.name);
    return names;
}

}  // namespace axonn
