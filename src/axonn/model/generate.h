// Text generation: sample one token at a time from the model's next-token distribution.
#pragma once

#include "axonn/model/gpt.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace axonn {

struct SampleOptions {
    int new_tokens = 64;
    float temperature = 0.8f;  // < 1 sharpens the distribution; 0 always takes the most likely token
    int top_k = 40;            // sample among the k most likely tokens; 0 = all
    std::uint64_t seed = 0;

    static constexpr int max_new_tokens = 100000;
    void validate() const;  // the ranges above, as --sample-tokens, --temperature and --top-k
};

// The most likely next token at positions [first, T) of every row of the model's last forward, a batch of B rows
// of T tokens: out[b·(T−first) + t − first]. Each Y rank holds a slice of the vocabulary, so the maxima are agreed
// over Y (a collective); ties go to the smallest id, as a serial argmax gives them. Every rank of the rows'
// data × z replica gets the same tokens.
void argmax_tokens(Gpt& model, int B, int T, int first, std::int32_t* out);

// Continues `prompt` by new_tokens tokens. Uses the model's B = 1 path and its last max_seq() tokens as context.
// `progress`, if given, hears the number of tokens generated so far after each one.
std::vector<std::int32_t> generate(Gpt& model, std::vector<std::int32_t> const& prompt, SampleOptions const& options,
                                   std::function<void(int)> const& progress = {});

}  // namespace axonn
