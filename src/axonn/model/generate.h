// Text generation: sample one token at a time from the model's next-token distribution.
#pragma once

#include "axonn/model/gpt.h"

#include <cstdint>
#include <vector>

namespace axonn {

struct SampleOptions {
    int new_tokens = 64;
    float temperature = 0.8f;  // < 1 sharpens the distribution
    int top_k = 40;            // sample among the k most likely tokens; 0 = all
    std::uint64_t seed = 0;
};

// Continues `prompt` by new_tokens tokens. Uses the model's B = 1 path and its last max_seq() tokens as context.
std::vector<std::int32_t> generate(Gpt& model, std::vector<std::int32_t> const& prompt, SampleOptions const& options);

}  // namespace axonn
