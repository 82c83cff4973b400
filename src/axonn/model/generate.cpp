#include "axonn/model/generate.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/parallel/batch_sum.h"
#include "axonn/parallel/vocab_parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace axonn {
namespace {

// The next token's logits over the whole vocabulary, on every rank of the replica: the vocabulary ranks' slices of the
// given row of the last forward, gathered (padding ids included; they are never chosen).
std::vector<float> gather_vocabulary(Decoder& model, int row) {
    VocabSlice const slice = model.vocab_slice();
    return gather_vocabulary_row(model.grid(), slice, model.logits() + static_cast<std::int64_t>(row) * slice.rows);
}

// The most likely token; ties go to the smallest id.
std::int32_t most_likely(std::span<float const> logits) {
    return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// The next token after `row` of the last forward: the most likely (temperature 0) or a draw keyed by the
// prompt and the token's index, the same on every rank and every grid.
std::int32_t next_token(Decoder& model, int row, SampleOptions const& options, int prompt, int index) {
    std::vector<float> const gathered = gather_vocabulary(model, row);
    std::span<float const> const logits(gathered.data(), static_cast<std::size_t>(model.architecture().vocab_size));
    AXONN_REQUIRE(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }),
                  "the model's logits are not finite: its weights are damaged (NaN or infinite)");
    if (options.temperature == 0.0f) return agreed_token(model.grid(), most_likely(logits));
    auto const draw_index = static_cast<std::uint64_t>(prompt) * (SampleOptions::max_new_tokens + 1) + index;
    return agreed_token(model.grid(), sample_token(logits, options, {options.seed, 7}, draw_index));
}

// One prompt being continued: every token so far, those the cache has yet to take in, and the continuation.
struct Continuation {
    int prompt = -1;  // its index; -1: this rank has no prompt left
    std::vector<std::int32_t> tokens;
    std::vector<std::int32_t> pending;
    std::vector<std::int32_t> generated;

    bool active() const { return prompt >= 0; }
};

// What this rank's replica runs: prompts replica, replica + replicas, ... in turn.
class ReplicaGenerator {
public:
    ReplicaGenerator(Decoder& model, std::span<std::vector<std::int32_t> const> prompts, SampleOptions const& options,
                     int context, TokenListener const& on_token)
        : model_(model), prompts_(prompts), options_(options), on_token_(on_token),
          replicas_(model.grid().shape().batch_replicas()),
          cache_(model.architecture(), model.grid().shape(), 1, context),
          idle_(model.architecture(), model.grid().shape(), 1, 1), results_(prompts.size()) {
        start(model.grid().batch_replica());
    }

    bool active() const { return current_.active(); }
    std::vector<std::vector<std::int32_t>>& results() { return results_; }

    // One forward: the next chunk of a prompt, or the last new token; a rank without a prompt runs a token of its
    // own so that its Z group's weight gathers go on.
    void step() {
        if (!current_.active()) {
            std::int32_t const token = 0;
            idle_.clear();
            model_.forward_cached(Batch{1, 1, &token, nullptr, nullptr}, idle_);
            return;
        }
        std::vector<std::int32_t>& pending = current_.pending;
        // At most the rows whose logits the model holds at once: the next token reads the last row's.
        int const chunk = static_cast<int>(std::min<std::int64_t>(
            {static_cast<std::int64_t>(pending.size()), model_.max_seq(), model_.logit_capacity()}));
        model_.forward_cached(Batch{1, chunk, pending.data(), nullptr, nullptr}, cache_);
        pending.erase(pending.begin(), pending.begin() + chunk);
        if (!pending.empty()) return;
        auto const index = static_cast<int>(current_.generated.size());
        std::int32_t const token = next_token(model_, chunk - 1, options_, current_.prompt, index);
        current_.generated.push_back(token);
        current_.tokens.push_back(token);
        if (on_token_) on_token_(current_.prompt, token);
        if (token == options_.stop_token || index + 1 == options_.new_tokens) {
            results_[current_.prompt] = std::move(current_.generated);
            start(current_.prompt + replicas_);
            return;
        }
        if (cache_.length() < cache_.capacity()) {
            pending.push_back(token);
        } else {
            restart(std::max(1, cache_.capacity() / 2));
        }
    }

private:
    void start(int prompt) {
        current_ = {};
        if (prompt >= static_cast<int>(prompts_.size())) return;
        current_.prompt = prompt;
        current_.tokens = prompts_[prompt];
        AXONN_INVARIANT(!current_.tokens.empty(), "prompt {} is empty", prompt);
        restart(cache_.capacity());
    }

    // The cache takes the last `keep` tokens anew.
    void restart(int keep) {
        cache_.clear();
        auto const count = std::min<std::size_t>(current_.tokens.size(), static_cast<std::size_t>(keep));
        current_.pending.assign(current_.tokens.end() - static_cast<std::ptrdiff_t>(count), current_.tokens.end());
    }

    Decoder& model_;
    std::span<std::vector<std::int32_t> const> prompts_;
    SampleOptions const& options_;
    TokenListener const& on_token_;
    int replicas_;
    KvCache cache_;
    KvCache idle_;
    Continuation current_;
    std::vector<std::vector<std::int32_t>> results_;
};

// Every prompt's continuation on every rank: each is held by the ranks of one replica, and every Z and data group
// has one rank per replica, so sums over them hand each to all (token + 1, 0 past a continuation's end).
std::vector<std::vector<std::int32_t>> share_results(ProcessGrid& grid,
                                                     std::vector<std::vector<std::int32_t>> const& mine,
                                                     int new_tokens) {
    std::vector<double> table(mine.size() * static_cast<std::size_t>(new_tokens), 0.0);
    for (std::size_t p = 0; p < mine.size(); ++p) {
        for (std::size_t i = 0; i < mine[p].size(); ++i) table[p * new_tokens + i] = mine[p][i] + 1.0;
    }
    sum_over_batch(grid, table);
    std::vector<std::vector<std::int32_t>> all(mine.size());
    for (std::size_t p = 0; p < mine.size(); ++p) {
        for (int i = 0; i < new_tokens && table[p * new_tokens + i] > 0.0; ++i) {
            all[p].push_back(static_cast<std::int32_t>(table[p * new_tokens + i]) - 1);
        }
    }
    return all;
}

}  // namespace

std::int32_t sample_token(std::span<float const> logits, SampleOptions const& options, PhiloxKey key,
                          std::uint64_t draw) {
    auto const V = static_cast<int>(logits.size());
    AXONN_INVARIANT(static_cast<std::uint64_t>(V) <= max_sampled_vocabulary,
                    "a vocabulary of {} tokens is more than sampling numbers ({})", V, max_sampled_vocabulary);
    std::vector<std::int32_t> order(static_cast<std::size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    int const k = options.top_k > 0 ? std::min(options.top_k, V) : V;
    // Most likely first; equal logits by id, so that the order does not depend on the sort.
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int32_t a, std::int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    int kept = k;
    if (options.top_p < 1.0f) {
        std::vector<double> weights(static_cast<std::size_t>(k));
        double total = 0.0;
        for (int i = 0; i < k; ++i) {
            weights[i] = std::exp((static_cast<double>(logits[order[i]]) - logits[order[0]]) / options.temperature);
            total += weights[i];
        }
        double reached = 0.0;
        for (kept = 0; kept < k && reached < options.top_p * total;) reached += weights[kept++];
    }
    // The Gumbel-max draw: the kept token whose logit / temperature plus its own Gumbel noise is largest, which is
    // a draw from their softmax. Each token's noise is keyed by the draw and its id, not its place in the order, so
    // another grid's rounding of the logits changes the token drawn only where the two largest sums lie within
    // rounding of each other (their gap is exponentially distributed, whatever the vocabulary's size), or a token
    // within rounding of the top-k or top-p cut would win. (A draw that walked the cumulative probabilities moved
    // its boundaries by the rounding of every token before them: on a nearly flat distribution over GPT-2's
    // vocabulary, 2 seeds of 7 drew other tokens on other grids.)
    std::int32_t chosen = order[0];
    double best = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < kept; ++i) {
        std::int32_t const id = order[i];
        double const uniform = uniform_open01(key, draw * max_sampled_vocabulary + static_cast<std::uint64_t>(id));
        double const score = static_cast<double>(logits[id]) / options.temperature - std::log(-std::log(uniform));
        if (score > best || (score == best && id < chosen)) {
            best = score;
            chosen = id;
        }
    }
    return chosen;
}

void SampleOptions::validate(std::string_view new_tokens_flag) const {
    AXONN_REQUIRE(new_tokens >= 0 && new_tokens <= max_new_tokens, "{} must lie in 0..{}, got {}", new_tokens_flag,
                  max_new_tokens, new_tokens);
    AXONN_REQUIRE(std::isfinite(temperature) && temperature >= 0,
                  "--temperature must be finite and not negative, got {} (0 always takes the most likely token)",
                  temperature);
    AXONN_REQUIRE(top_k >= 0, "--top-k must not be negative, got {} (0: sample among all tokens)", top_k);
    AXONN_REQUIRE(top_p > 0 && top_p <= 1, "--top-p must lie in (0, 1], got {} (1: sample among all tokens)", top_p);
}

void argmax_tokens(Decoder& model, int B, int T, int first, std::int32_t* out) {
    VocabSlice const slice = model.vocab_slice();
    std::vector<float const*> rows;
    for (int b = 0; b < B; ++b) {
        for (int t = first; t < T; ++t) {
            rows.push_back(model.logits() + (static_cast<std::int64_t>(b) * T + t) * slice.rows);
        }
    }
    vocab_parallel_argmax(model.grid(), slice, rows, out);
}

int cache_positions(std::span<std::vector<std::int32_t> const> prompts, int new_tokens, int context) {
    std::size_t longest = 0;
    for (auto const& prompt : prompts) longest = std::max(longest, prompt.size());
    return static_cast<int>(std::min<std::int64_t>(context, static_cast<std::int64_t>(longest) + new_tokens));
}

std::vector<std::vector<std::int32_t>> generate(Decoder& model, std::span<std::vector<std::int32_t> const> prompts,
                                                SampleOptions const& options, int context,
                                                TokenListener const& on_token) {
    if (options.new_tokens == 0) return std::vector<std::vector<std::int32_t>>(prompts.size());
    // No restart is lost by the smaller cache: one that holds a prompt and its new tokens never fills.
    ReplicaGenerator replica(model, prompts, options, cache_positions(prompts, options.new_tokens, context),
                             on_token);
    // The ranks of a Z group gather each other's weight shards in every forward, so they step together until the
    // last of them is done; other groups need not wait.
    while (any_in_z_group(model.grid(), replica.active())) replica.step();
    return share_results(model.grid(), replica.results(), options.new_tokens);
}

}  // namespace axonn
