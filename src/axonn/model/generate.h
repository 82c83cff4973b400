// Text generation on any grid: a cache of keys and values (kv_cache.h) so that each new token costs one forward
// of one token, and the next token chosen from the logits of all Y ranks' vocabulary slices.
#pragma once

#include "axonn/core/rng.h"
#include "axonn/model/decoder.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace axonn {

struct SampleOptions {
    int new_tokens = 64;
    float temperature = 0.8f;  // < 1 sharpens the distribution; 0 always takes the most likely token (greedy)
    int top_k = 40;            // sample among the k most likely tokens; 0 = all
    float top_p = 1.0f;        // then among the most likely whose probabilities reach top_p (nucleus); 1 = all
    std::int32_t stop_token = -1;  // a row ends after generating it (it is kept); -1 = none
    std::uint64_t seed = 0;

    static constexpr int max_new_tokens = 100000;
    // The ranges above, naming the options as `new_tokens_flag` (--sample-tokens, --max-new-tokens), --temperature,
    // --top-k and --top-p. The stop token is checked against the vocabulary where it is parsed.
    void validate(std::string_view new_tokens_flag) const;
};

// The most likely next token at positions [first, T) of every row of the model's last forward, a batch of B rows
// of T tokens: out[b·(T−first) + t − first]. Each Y rank holds a slice of the vocabulary, so the maxima are agreed
// over Y (a collective); ties go to the smallest id, as a serial argmax gives them. Every rank of the rows'
// data × z replica gets the same tokens.
void argmax_tokens(Decoder& model, int B, int T, int first, std::int32_t* out);

// The most tokens a vocabulary may have for sample_token, whose draws number each token's noise as
// draw × max_sampled_vocabulary + id.
inline constexpr std::uint64_t max_sampled_vocabulary = std::uint64_t{1} << 24;

// A draw from softmax(logits / temperature) over the whole vocabulary, restricted to the top_k most likely tokens
// and then to the fewest of them whose probabilities reach top_p: the token with the largest logit / temperature
// plus Gumbel noise, keyed by `key`, the draw's number `draw` and the token's id.
std::int32_t sample_token(std::span<float const> logits, SampleOptions const& options, PhiloxKey key,
                          std::uint64_t draw);

// Hears each new token of a prompt that this rank's replica continues: (prompt index, token).
using TokenListener = std::function<void(int, std::int32_t)>;

// The positions the cache of a generation needs: the longest prompt plus the new tokens, at most `context` (a
// cache of the whole context would hold, for a model of 10^7 positions, gigabytes to continue a short prompt).
int cache_positions(std::span<std::vector<std::int32_t> const> prompts, int new_tokens, int context);

// Continues every prompt by options.new_tokens tokens (fewer where it meets the stop token), on the model's grid,
// and returns the continuations on every rank. The prompts are shared out over the data × z replicas, one at a
// time each: a prompt is taken in chunks of up to max_seq() tokens, then every new token is one forward of one
// token over the cache. `context` (≤ the model's context) is how many positions the cache may hold (it holds
// cache_positions of them); when a prompt outgrows it, the cache restarts from its last context/2 tokens. Each token's draw depends on the seed, the
// prompt's index and the token's index only, so every grid gives the serial run's tokens.
// Collective over the world; every rank passes the same prompts and options.
std::vector<std::vector<std::int32_t>> generate(Decoder& model, std::span<std::vector<std::int32_t> const> prompts,
                                                SampleOptions const& options, int context,
                                                TokenListener const& on_token = {});

}  // namespace axonn
