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

std::vector<std::int32_t> generate(Gpt& model, std::vector<std::int32_t> const& prompt, SampleOptions const& options) {
    require(!prompt.empty(), "generation needs at least one prompt token");
    std::vector<std::int32_t> tokens = prompt;
    int const Vp = model.config().padded_vocab_size();
    for (int i = 0; i < options.new_tokens; ++i) {
        int const T = static_cast<int>(std::min<std::size_t>(tokens.size(), model.max_seq()));
        Batch const context{1, T, tokens.data() + tokens.size() - T, nullptr, nullptr};
        model.forward(context);
        float const* last = model.logits() + static_cast<std::int64_t>(T - 1) * Vp;
        tokens.push_back(sample_token(last, model.config().vocab_size, options, uniform_open01({options.seed, 7}, i)));
    }
    return {tokens.begin() + static_cast<std::ptrdiff_t>(prompt.size()), tokens.end()};
}

}  // namespace axonn
