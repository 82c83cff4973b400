// The models the PyTorch comparisons run: awkward sizes on purpose (vocabulary 300 padded to 320, width 72, 3 heads
// of 24, 2 layers, context 24), so that no power of two hides a layout mistake.
#pragma once

#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/llama/llama_config.h"

namespace axonn::testing {

inline GptConfig parity_config() {
    GptConfig config;
    config.name = "parity";
    config.vocab_size = 300;
    config.n_layer = 2;
    config.n_head = 3;
    config.n_embd = 72;
    config.max_seq = 24;
    return config;
}

// Llama's: vocabulary 300 padded to 320, width 48, 4 query heads of 12 sharing 2 key/value heads, an MLP of 80, 2
// layers, context 24; Llama 3's rope scaling against an original context of 64, so that the head's 6 frequencies
// fall in all three of its bands.
inline LlamaConfig parity_llama_config() {
    LlamaConfig config;
    config.name = "parity-llama";
    config.vocab_size = 300;
    config.hidden_size = 48;
    config.intermediate_size = 80;
    config.num_hidden_layers = 2;
    config.num_attention_heads = 4;
    config.num_key_value_heads = 2;
    config.max_position_embeddings = 24;
    config.rope_theta = 10000.0;
    config.rope_scaling = RopeScaling{8.0, 1.0, 4.0, 64};
    return config;
}

}  // namespace axonn::testing
