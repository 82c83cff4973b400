// Counter-based random numbers (Philox-4x32-10, Salmon et al., SC'11).
// A value is a pure function of (seed, stream, index): no state is carried from one draw to the next. The model
// uses the stream for the parameter tensor and the index for the element's position in the full, unsharded
// tensor, so a process that owns any slice of a tensor can generate exactly that slice, and the result is the
// same on every process grid.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

namespace axonn {

struct PhiloxKey {
    std::uint64_t seed = 0;
    std::uint64_t stream = 0;
};

// Four independent 32-bit words for counter `index` under `key`.
std::array<std::uint32_t, 4> philox4x32(PhiloxKey key, std::uint64_t index);

// One uniform in (0, 1) and one standard normal for element `index` of stream `key.stream`.
double uniform_open01(PhiloxKey key, std::uint64_t index);
double standard_normal(PhiloxKey key, std::uint64_t index);

// Shuffles `values` in place (Fisher-Yates): the permutation is a function of `key` and the length alone.
template <typename T>
void seeded_shuffle(std::span<T> values, PhiloxKey key) {
    for (std::size_t i = values.size(); i-- > 1;) {
        std::swap(values[i], values[philox4x32(key, i)[0] % (i + 1)]);
    }
}

// values[i] = mean + std * N(0,1) drawn at index first_index + i.
void fill_normal(std::span<float> values, PhiloxKey key, std::uint64_t first_index, float mean, float std);

// 64 bits from the operating system's entropy, never 0 (which ids use for "none"): for ids that must differ from
// run to run (a training run's), unlike everything above.
std::uint64_t random_id();

inline constexpr std::uint64_t stable_hash_basis = 0xcbf29ce484222325ull;  // FNV-1a's offset basis

// FNV-1a of `text`: the same 64 bits in every build and on every machine (std::hash promises neither). `basis`,
// another text's hash, continues that hash: the hash of the two texts one after the other.
std::uint64_t stable_hash(std::string_view text, std::uint64_t basis = stable_hash_basis);

}  // namespace axonn
