// The Goldfish loss (Hans et al., "Be like a Goldfish, Don't Memorize!", NeurIPS 2024): a pseudo-random 1/k of the
// training targets is left out of the loss, so the model never learns to reproduce a long passage verbatim, however
// often it sees it. The forward pass is unchanged (every token is still an input); only the dropped targets'
// loss terms, and so their gradients, are removed, and the loss is the mean over the kept targets of the global
// batch. Validation and evaluation are never masked.
//
// Strategies:
//   hash    drop target t when a hash of the h target ids ending at t (t itself and the h-1 before it) falls
//           below 1/k. A function of token ids alone, not of rank, step, position or document, so every copy of
//           a passage gets the same mask and the dropped tokens are never learned. Targets t < h-1 of a row are
//           always kept (their window is incomplete). The hash is ordered (splitmix64 over the window), unlike
//           the reference's product of ids, which ignores order and is forced to 0 by any id 0.
//   static  drop positions 0, k, 2k, ... of every row: positional, so copies of a passage at different offsets
//           lose different tokens (an ablation).
//   random  drop each target with probability 1/k, drawn anew every step: over many steps every token is
//           supervised (an ablation; the draw is a function of the seed, the step and the position in the global
//           batch, so it is the same on every grid).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace axonn {

enum class GoldfishStrategy { hash, positional, random };

struct GoldfishOptions {
    int k = 0;  // 1/k of the targets dropped; 0: off
    int h = 13;
    GoldfishStrategy strategy = GoldfishStrategy::hash;
    std::uint64_t seed = 2971215073u;  // the hash's and the random draw's seed: one mask per seed

    bool enabled() const { return k > 0; }
    // "k=4,h=13,strategy=hash", as --goldfish takes it.
    std::string describe() const;
};

// Parses --goldfish's "k=K,h=H[,strategy=hash|static|random]" (h defaults to 13, the paper's width; the strategy
// to hash), or "off" (no Goldfish: what a resumed run's changed settings call it). Throws axonn::UsageError naming
// the bad part and the fix: k < 2, h < 1, an unknown strategy or key, a key given twice.
GoldfishOptions parse_goldfish(std::string_view spec);

// keep[B,T]: 1 where target [b,t] counts in the loss, 0 where it is dropped or ignored (a target of -1).
// `step` selects the random strategy's draw; the others do not read it.
void goldfish_mask(GoldfishOptions const& options, std::span<std::int32_t const> targets, int T,
                   std::int64_t step, std::span<float> keep);

// Refuses a hash mask wider than the sequences it masks, `length` targets (`what` names them, such as "--seq 32"):
// the hash reads the h targets that end at a target, so no target of such a sequence would leave the loss.
void require_goldfish_drops_targets(GoldfishOptions const& options, int length, std::string_view what);

// The share of a sequence's T targets the mask is expected to drop: 1/k of those the strategy may drop (hash: the
// T - h + 1 that have h - 1 targets before them, none where h > T; static: positions 0, k, 2k, ...; random: all).
// The hash strategy's holds where the data's h-grams differ: on text that repeats them (a short h above all) the
// share follows how often each repeats, which goldfish_share measures.
double goldfish_drop_fraction(GoldfishOptions const& options, int T);

// Of a batch's targets that count (not -1), how many its Goldfish mask `keep` drops.
struct GoldfishShare {
    std::int64_t dropped = 0;
    std::int64_t targets = 0;
    double fraction() const { return targets == 0 ? 0.0 : static_cast<double>(dropped) / static_cast<double>(targets); }
    GoldfishShare& operator+=(GoldfishShare const& other) {
        dropped += other.dropped;
        targets += other.targets;
        return *this;
    }
};
GoldfishShare goldfish_share(std::span<std::int32_t const> targets, std::span<float const> keep);

// Whether the hash strategy drops the target that ends `window` (the h target ids up to and including it).
bool goldfish_hash_drops(GoldfishOptions const& options, std::span<std::int32_t const> window);

}  // namespace axonn
