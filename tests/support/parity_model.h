// The model the PyTorch comparisons run: awkward sizes on purpose (vocabulary 300 padded to 320, width 72, 3 heads
// of 24, 2 layers, context 24), so that no power of two hides a layout mistake.
#pragma once

#include "axonn/model/gpt_config.h"

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

}  // namespace axonn::testing
