// Greedy decoding without the cache of keys and values, the reference generate() is checked against.
#pragma once

#include "axonn/model/decoder.h"
#include "axonn/model/generate.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace axonn::testing {

// One forward over the window per token, on the model's grid (each data × z replica decoding `tokens` alike). The
// window is what the cache would hold: the whole sequence until it fills `context` positions, then its last
// context/2 tokens, growing again. The model must take one sequence of `context` tokens.
inline std::vector<std::int32_t> greedy_uncached(Decoder& model, std::vector<std::int32_t> tokens, int new_tokens,
                                                 int context) {
    std::size_t const prompt = tokens.size();
    std::size_t start = tokens.size() > static_cast<std::size_t>(context) ? tokens.size() - context : 0;
    for (int i = 0; i < new_tokens; ++i) {
        int const T = static_cast<int>(tokens.size() - start);
        model.forward(Batch{1, T, tokens.data() + start, nullptr, nullptr});
        std::int32_t next = 0;
        argmax_tokens(model, 1, T, T - 1, &next);
        tokens.push_back(next);
        if (T == context) start = tokens.size() - std::max(1, context / 2);
    }
    return {tokens.begin() + static_cast<std::ptrdiff_t>(prompt), tokens.end()};
}

}  // namespace axonn::testing
