#include "axonn/memorization/markov_corpus.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace axonn {

MarkovChain::MarkovChain(int vocab, int successors, std::uint64_t seed) : vocab_(vocab), successors_(successors) {
    AXONN_REQUIRE(vocab >= 2 && successors >= 1 && successors <= vocab,
                  "a Markov chain needs 2 or more states and between 1 and {} successors per state, got {} and {}",
                  vocab, vocab, successors);
    double total = 0;
    for (int i = 1; i <= successors; ++i) total += 1.0 / i;
    double running = 0;
    for (int i = 1; i <= successors; ++i) {
        running += 1.0 / i / total;
        cumulative_.push_back(running);
    }
    cumulative_.back() = 1.0;
    // Each state's successors: the first `successors` ids of a seeded shuffle of all ids, so they are distinct
    // and the entropy is exactly the Zipf weights'.
    next_.resize(static_cast<std::size_t>(vocab) * successors);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(vocab));
    for (int state = 0; state < vocab; ++state) {
        std::iota(ids.begin(), ids.end(), 0);
        seeded_shuffle(std::span(ids), {seed, static_cast<std::uint64_t>(state)});
        std::copy_n(ids.begin(), successors, next_.begin() + static_cast<std::ptrdiff_t>(state) * successors);
    }
}

double MarkovChain::entropy_nats() const {
    double entropy = 0, previous = 0;
    for (double c : cumulative_) {
        double const p = c - previous;
        entropy -= p * std::log(p);
        previous = c;
    }
    return entropy;
}

double MarkovChain::max_probability() const { return cumulative_.front(); }

void MarkovChain::sample(std::span<std::int32_t> tokens, std::uint64_t seed, std::uint64_t stream,
                         std::int32_t previous) const {
    PhiloxKey const key{seed, stream};
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        double const u = uniform_open01(key, i);
        if (previous < 0) {
            previous = std::min(static_cast<std::int32_t>(u * vocab_), static_cast<std::int32_t>(vocab_ - 1));
        } else {
            auto const pick = std::lower_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
            previous = next_[static_cast<std::size_t>(previous) * successors_ + static_cast<std::size_t>(pick)];
        }
        tokens[i] = previous;
    }
}

}  // namespace axonn
