// GPT-2 model shapes: the presets, dimensions given one by one, and the checks that make a shape trainable.
// Letters used across the model code: L layers, NH heads, C channels (width), hs = C/NH head size,
// V vocabulary, Vp vocabulary padded to a multiple of 64 (aligned GEMM rows), maxT context length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace axonn {

struct GptConfig {
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

// The presets: gpt2-micro (parity on every grid), gpt2-tiny (tests), gpt2-mini (the demo), gpt2-small (124M),
// gpt2-medium, gpt2-large, gpt2-xl, and AxoNN's benchmark shapes gpt-5b ... gpt-640b.
GptConfig gpt_preset(std::string const& name);
std::vector<std::string> gpt_preset_names();

}  // namespace axonn
