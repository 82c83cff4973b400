#include "axonn/train/goldfish.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>
#include <charconv>
#include <limits>

namespace axonn {
namespace {

// Sebastiano Vigna's splitmix64 finaliser: every input bit reaches every output bit.
std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

char const* strategy_name(GoldfishStrategy strategy) {
    switch (strategy) {
        case GoldfishStrategy::hash: return "hash";
        case GoldfishStrategy::positional: return "static";
        case GoldfishStrategy::random: return "random";
    }
    return "?";
}

int parse_int(std::string_view key, std::string_view text) {
    int value = 0;
    auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range && end == text.data() + text.size()) {
        throw UsageError(fmt::format("--goldfish: {}={} is too large: at most {} (for example --goldfish k=4,h=13)",
                                     key, text, std::numeric_limits<int>::max()));
    }
    if (error != std::errc() || end != text.data() + text.size()) {
        throw UsageError(fmt::format("--goldfish: {}={} is not an integer (for example --goldfish k=4,h=13)", key,
                                     text));
    }
    return value;
}

GoldfishStrategy parse_strategy(std::string_view text) {
    for (GoldfishStrategy s : {GoldfishStrategy::hash, GoldfishStrategy::positional, GoldfishStrategy::random}) {
        if (text == strategy_name(s)) return s;
    }
    throw UsageError(fmt::format("--goldfish: unknown strategy '{}': choose hash, static or random", text));
}

}  // namespace

std::string GoldfishOptions::describe() const {
    // h (the hash's context) means nothing to the other strategies: not shown for them.
    if (strategy != GoldfishStrategy::hash) return fmt::format("k={},strategy={}", k, strategy_name(strategy));
    return fmt::format("k={},h={},strategy={}", k, h, strategy_name(strategy));
}

GoldfishOptions parse_goldfish(std::string_view spec) {
    GoldfishOptions options;
    if (spec == "off") return options;
    bool has_k = false;
    std::vector<std::string_view> keys;
    std::string_view const whole = spec;
    for (bool more = true; more;) {  // every item, an empty one too: `k=4,` is a mistake, not k=4
        std::size_t const comma = spec.find(',');
        std::string_view const part = spec.substr(0, comma);
        more = comma != std::string_view::npos;
        spec = more ? spec.substr(comma + 1) : std::string_view();
        if (part.empty()) {
            throw UsageError(fmt::format("--goldfish {}: an item is empty: separate the key=value items with one ','",
                                         whole));
        }
        std::size_t const equals = part.find('=');
        if (equals == std::string_view::npos) {
            throw UsageError(fmt::format("--goldfish: '{}' is not key=value (for example --goldfish k=4,h=13)", part));
        }
        std::string_view const key = part.substr(0, equals), value = part.substr(equals + 1);
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
            throw UsageError(fmt::format("--goldfish: {} is given twice: give each key once", key));
        }
        keys.push_back(key);
        if (key == "k") {
            options.k = parse_int(key, value);
            has_k = true;
        } else if (key == "h") {
            options.h = parse_int(key, value);
        } else if (key == "strategy") {
            options.strategy = parse_strategy(value);
        } else {
            throw UsageError(fmt::format("--goldfish: unknown key '{}': the keys are k, h and strategy", key));
        }
    }
    if (!has_k) throw UsageError("--goldfish needs k, the drop rate 1/k (for example --goldfish k=4,h=13)");
    if (options.k < 2) {
        throw UsageError(fmt::format("--goldfish: k={} must be at least 2 (1/k of the targets are dropped; the "
                                     "paper uses 4)", options.k));
    }
    if (options.h < 1) {
        throw UsageError(fmt::format("--goldfish: h={} must be at least 1 (the hashed window of target ids; the "
                                     "paper uses 13)", options.h));
    }
    return options;
}

bool goldfish_hash_drops(GoldfishOptions const& options, std::span<std::int32_t const> window) {
    std::uint64_t x = options.seed;
    for (std::int32_t id : window) x = splitmix64(x ^ static_cast<std::uint32_t>(id));
    double const uniform = static_cast<double>(x >> 11) * 0x1p-53;  // the top 53 bits, in [0, 1)
    return uniform < 1.0 / options.k;
}

double goldfish_drop_fraction(GoldfishOptions const& options, int T) {
    if (!options.enabled() || T <= 0) return 0.0;
    switch (options.strategy) {
        case GoldfishStrategy::hash: return std::max(0, T - options.h + 1) / static_cast<double>(T) / options.k;
        case GoldfishStrategy::positional: return ((T + options.k - 1) / options.k) / static_cast<double>(T);
        case GoldfishStrategy::random: return 1.0 / options.k;
    }
    return 0.0;
}

GoldfishShare goldfish_share(std::span<std::int32_t const> targets, std::span<float const> keep) {
    GoldfishShare share;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        if (targets[i] < 0) continue;
        ++share.targets;
        if (keep[i] == 0.0f) ++share.dropped;
    }
    return share;
}

void goldfish_mask(GoldfishOptions const& options, std::span<std::int32_t const> targets, int T, std::int64_t step,
                   std::span<float> keep) {
    AXONN_INVARIANT(T > 0 && targets.size() % static_cast<std::size_t>(T) == 0 && keep.size() == targets.size(),
                    "goldfish_mask: {} targets and {} mask values for rows of {}", targets.size(), keep.size(), T);
    for (std::size_t i = 0; i < targets.size(); ++i) {
        int const t = static_cast<int>(i % static_cast<std::size_t>(T));
        bool drop = false;
        if (options.enabled()) {
            switch (options.strategy) {
                case GoldfishStrategy::hash:
                    drop = t >= options.h - 1 && goldfish_hash_drops(options, targets.subspan(i + 1 - options.h,
                                                                                        options.h));
                    break;
                case GoldfishStrategy::positional: drop = t % options.k == 0; break;
                case GoldfishStrategy::random:
                    drop = uniform_open01({options.seed, static_cast<std::uint64_t>(step)}, i) < 1.0 / options.k;
                    break;
            }
        }
        keep[i] = targets[i] < 0 || drop ? 0.0f : 1.0f;
    }
}

void require_goldfish_drops_targets(GoldfishOptions const& options, int length, std::string_view what) {
    AXONN_REQUIRE(!options.enabled() || options.strategy != GoldfishStrategy::hash || options.h <= length,
                  "--goldfish h={} is longer than {}: the hash reads the h targets that end at a target, so no "
                  "target of a sequence would leave the loss; choose h of at most {}",
                  options.h, what, length);
}

}  // namespace axonn
