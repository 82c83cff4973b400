// GPT-2 model shapes: the presets, dimensions given one by one, and the checks that make a shape trainable.
// Letters used across the model code: L layers, NH heads, C channels (width), hs = C/NH head size,
// V vocabulary, Vp vocabulary padded to a multiple of 64 (aligned GEMM rows), maxT context length.
#pragma once

#include "axonn/model/architecture.h"
#include "axonn/model/model_config.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

struct GptConfig {
    static constexpr std::string_view family = "gpt2";
    std::string name = "custom";
    int vocab_size = 50257;  // V
    int n_layer = 12;        // L
    int n_head = 12;         // NH
    int n_embd = 768;        // C
    int max_seq = 1024;      // maxT

    // Vp: the vocabulary rounded up to a multiple of 64. The padded logits are masked out of the loss.
    int padded_vocab_size() const { return (vocab_size + 63) / 64 * 64; }
    int head_size() const { return n_embd / n_head; }

    // Trainable parameters, excluding the padding rows of the embedding (the count MFU uses).
    std::int64_t parameter_count() const;

    // Throws axonn::Error naming the first impossible value and how to fix it.
    void validate() const;
};

// --n-layer, --n-head, --n-embd and --context.
constexpr ShapeFields<GptConfig> shape_fields(GptConfig const&) {
    return {&GptConfig::n_layer, &GptConfig::n_head, &GptConfig::n_embd, &GptConfig::max_seq};
}

// GPT-2 as the decoder runs it: LayerNorm, GELU, learned positions, biases, the LM head tied to the embedding
// (defined with the parameter table, gpt2_parameters.cpp).
Architecture decoder_architecture(GptConfig const& config);

// The presets: gpt2-micro (parity on every grid), gpt2-tiny (tests), gpt2-mini (the demo), gpt2-small (124M),
// gpt2-medium, gpt2-large, gpt2-xl, and AxoNN's benchmark shapes gpt-5b ... gpt-640b.
GptConfig gpt_preset(std::string const& name);
std::vector<std::string> gpt_preset_names();

}  // namespace axonn
