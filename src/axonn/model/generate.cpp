#include "axonn/model/generate.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace axonn {
namespace {

// Draws an index from softmax(logits / temperature) restricted to the top_k largest logits.
std::int32_t sample_token(float const* logits, int V, SampleOptions const& options, double uniform) {
    std::vector<std::int32_t> order(static_cast<std::size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    int const k = options.top_k > 0 ? std::min(options.top_k, V) : V;
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [logits](std::int32_t a, std::int32_t b) { return logits[a] > logits[b]; });
    std::vector<double> weights(static_cast<std::size_t>(k));
    double total = 0.0;
    for (int i = 0; i < k; ++i) {
        weights[i] = std::exp((logits[order[i]] - logits[order[0]]) / std::max(options.temperature, 1e-4f));
        total += weights[i];
    }
    double threshold = uniform * total;
    for (int i = 0; i < k; ++i) {
        threshold -= weights[i];
        if (threshold <= 0.0) return order[i];
    }
    return order[k - 1];
}

}  // namespace

void SampleOptions::validate() const {
    require(new_tokens >= 0 && new_tokens <= max_new_tokens, "--sample-tokens must lie in 0..{}, got {}",
            max_new_tokens, new_tokens);
    require(std::isfinite(temperature) && temperature >= 0,
            "--temperature must be finite and not negative, got {} (0 always takes the most likely token)",
            temperature);
    require(top_k >= 0, "--top-k must not be negative, got {} (0 samples among all tokens)", top_k);
}

std::vector<std::int32_t> generate(Gpt& model, std::vector<std::int32_t> const& prompt, SampleOptions const& options,
                                   std::function<void(int)> const& progress) {
    invariant(!prompt.empty(), "generation needs at least one prompt token");
    std::vector<std::int32_t> tokens = prompt;
    int const Vp = model.config().padded_vocab_size();
    for (int i = 0; i < options.new_tokens; ++i) {
        int const T = static_cast<int>(std::min<std::size_t>(tokens.size(), model.max_seq()));
        Batch const context{1, T, tokens.data() + tokens.size() - T, nullptr, nullptr};
        model.forward(context);
        float const* last = model.logits() + static_cast<std::int64_t>(T - 1) * Vp;
        tokens.push_back(sample_token(last, model.config().vocab_size, options, uniform_open01({options.seed, 7}, i)));
        if (progress) progress(i + 1);
    }
    return {tokens.begin() + static_cast<std::ptrdiff_t>(prompt.size()), tokens.end()};
}

}  // namespace axonn
