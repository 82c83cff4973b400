// Llama model shapes (Llama 3's architecture: RMSNorm, rotary embeddings with Llama 3's frequency scaling, SwiGLU,
// grouped-query attention, no biases, an untied LM head), with the fields named as Hugging Face's LlamaConfig
// names them. Letters: L layers, C = hidden_size, F = intermediate_size, NH query heads, NKV key/value heads,
// hs = C/NH, V vocabulary, Vp padded to a multiple of 64.
#pragma once

#include "axonn/kernels/rope_frequencies.h"
#include "axonn/model/architecture.h"
#include "axonn/model/model_config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// The defaults are Llama 3.1 8B's config.json.
struct LlamaConfig {
    static constexpr std::string_view family = "llama";
    std::string name = "custom";
    int vocab_size = 128256;               // V
    int hidden_size = 4096;                // C
    int intermediate_size = 14336;         // F
    int num_hidden_layers = 32;            // L
    int num_attention_heads = 32;          // NH
    int num_key_value_heads = 8;           // NKV
    int max_position_embeddings = 131072;  // the context
    double rms_norm_eps = 1e-5;
    double rope_theta = 500000.0;
    std::optional<RopeScaling> rope_scaling = RopeScaling{};  // rope_type "llama3"; none: plain RoPE
    // The special tokens' ids (bos, pad, eos) as an imported config.json gives them, written back by an export (transformers'
    // generation stops at eos_token_id): none where it gave none (a model trained from a preset). eos_token_id may
    // be a list there (Llama 3.1 Instruct's [128001, 128008, 128009]); they do not change what the model computes.
    std::optional<int> bos_token_id = std::nullopt;
    std::optional<int> pad_token_id = std::nullopt;
    std::vector<int> eos_token_ids = {};
    bool eos_token_list = false;  // eos_token_id written as a list, even of one id

    int padded_vocab_size() const { return (vocab_size + 63) / 64 * 64; }
    int head_size() const { return hidden_size / num_attention_heads; }

    // Trainable parameters, the embedding's and the LM head's padding rows excluded (Hugging Face's count).
    std::int64_t parameter_count() const;
    // Throws axonn::Error naming the first impossible value and how to fix it.
    void validate() const;
};

// --n-layer, --n-head, --n-embd and --context.
constexpr ShapeFields<LlamaConfig> shape_fields(LlamaConfig const&) {
    return {&LlamaConfig::num_hidden_layers, &LlamaConfig::num_attention_heads, &LlamaConfig::hidden_size,
            &LlamaConfig::max_position_embeddings};
}

// Llama as the decoder runs it: RMSNorm, SwiGLU, rotary positions, grouped-query attention, no biases, an untied
// LM head (defined with the parameter table, llama_parameters.cpp).
Architecture decoder_architecture(LlamaConfig const& config);

// The presets: llama-tiny (tests: 2 layers of width 64, 8 query and 2 key/value heads, a 256-word vocabulary),
// and Llama 3.1's 8B, 70B and 405B (llama3.1-8b, llama3.1-70b, llama3.1-405b).
LlamaConfig llama_preset(std::string const& name);
std::vector<std::string> llama_preset_names();

}  // namespace axonn
