#include "axonn/model/generate.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

void argmax_tokens(Gpt& model, int B, int T, int first, std::int32_t* out) {
    VocabSlice const slice = model.vocab_slice();
    std::size_t const count = static_cast<std::size_t>(B) * (T - first);
    std::vector<float> best(count);
    std::vector<double> best_id(count);
    for (int b = 0; b < B; ++b) {
        for (int t = first; t < T; ++t) {
            float const* row = model.logits() + (static_cast<std::int64_t>(b) * T + t) * slice.rows;
            std::size_t const i = static_cast<std::size_t>(b) * (T - first) + (t - first);
            int const local = static_cast<int>(std::max_element(row, row + slice.valid) - row);  // the first maximum
            best[i] = slice.valid > 0 ? row[local] : -std::numeric_limits<float>::infinity();
            best_id[i] = slice.begin + local;
        }
    }
    std::vector<float> const mine = best;
    Communicator& y = model.grid().comm(Group::y);
    y.all_reduce_max(best.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
        if (mine[i] != best[i]) best_id[i] = std::numeric_limits<double>::infinity();  // another slice holds it
    }
    y.all_reduce_min(best_id.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
        // No slice held the maximum: the logits are NaN, and so are the weights.
        require(std::isfinite(best_id[i]), "the model's logits are not finite: its weights are damaged (NaN)");
        out[i] = static_cast<std::int32_t>(best_id[i]);
    }
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
