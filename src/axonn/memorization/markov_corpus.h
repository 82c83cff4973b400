// A synthetic corpus whose zero-memorization baseline is known exactly: a first-order Markov chain over V token
// ids in which every state has the same number of distinct successors, drawn from a fixed seed, with Zipf weights
// ∝ 1/i. Every state's next-token distribution has the same entropy, so the chain's conditional entropy (the
// floor of any model's validation loss) is that one number. A model that knows only the chain reproduces a given
// 32-token continuation greedily with probability about p_max^32 (≈ 1e-17 for 16 successors): an exact match is
// memorization, not generalisation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace axonn {

class MarkovChain {
public:
    MarkovChain(int vocab, int successors, std::uint64_t seed);

    int vocab() const { return vocab_; }
    // H = −Σ p_i ln p_i of the Zipf weights: nats per token.
    double entropy_nats() const;
    // The largest next-token probability (the first successor's).
    double max_probability() const;

    // A sample of tokens.size() tokens whose first follows `previous` (or, when previous < 0, is uniform);
    // a pure function of (seed, stream), as the counter-based RNG is.
    void sample(std::span<std::int32_t> tokens, std::uint64_t seed, std::uint64_t stream, std::int32_t previous = -1) const;

private:
    int vocab_;
    int successors_;
    std::vector<double> cumulative_;       // the Zipf weights' running sum, normalised to end at 1
    std::vector<std::int32_t> next_;       // [vocab, successors]: state s's i-th successor
};

}  // namespace axonn
