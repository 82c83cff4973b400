#include "axonn/core/rng.h"

#include <cmath>
#include <numbers>
#include <random>

namespace axonn {
namespace {

constexpr std::uint32_t philox_m0 = 0xD2511F53u;
constexpr std::uint32_t philox_m1 = 0xCD9E8D57u;
constexpr std::uint32_t philox_w0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t philox_w1 = 0xBB67AE85u;  // sqrt(3) - 1

void multiply_hi_lo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
    std::uint64_t const product = static_cast<std::uint64_t>(a) * b;
    hi = static_cast<std::uint32_t>(product >> 32);
    lo = static_cast<std::uint32_t>(product);
}

// Maps 32 random bits to (0, 1), never 0 or 1, so log() in Box-Muller stays finite.
double to_open01(std::uint32_t bits) { return (static_cast<double>(bits) + 0.5) / 4294967296.0; }

}  // namespace

std::array<std::uint32_t, 4> philox4x32(PhiloxKey key, std::uint64_t index) {
    // The counter holds the element index and the stream; the key holds the seed.
    std::array<std::uint32_t, 4> counter = {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
                                            static_cast<std::uint32_t>(key.stream),
                                            static_cast<std::uint32_t>(key.stream >> 32)};
    std::uint32_t k0 = static_cast<std::uint32_t>(key.seed);
    std::uint32_t k1 = static_cast<std::uint32_t>(key.seed >> 32);
    for (int round = 0; round < 10; ++round) {
        std::uint32_t hi0, lo0, hi1, lo1;
        multiply_hi_lo(philox_m0, counter[0], hi0, lo0);
        multiply_hi_lo(philox_m1, counter[2], hi1, lo1);
        counter = {hi1 ^ counter[1] ^ k0, lo1, hi0 ^ counter[3] ^ k1, lo0};
        k0 += philox_w0;
        k1 += philox_w1;
    }
    return counter;
}

double uniform_open01(PhiloxKey key, std::uint64_t index) { return to_open01(philox4x32(key, index)[0]); }

double standard_normal(PhiloxKey key, std::uint64_t index) {
    auto const bits = philox4x32(key, index);
    double const radius = std::sqrt(-2.0 * std::log(to_open01(bits[0])));
    return radius * std::cos(2.0 * std::numbers::pi * to_open01(bits[1]));
}

void fill_normal(std::span<float> values, PhiloxKey key, std::uint64_t first_index, float mean, float std) {
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = static_cast<float>(mean + std * standard_normal(key, first_index + i));
    }
}

std::uint64_t random_id() {
    std::random_device entropy;
    std::uint64_t id = 0;
    while (id == 0) id = (static_cast<std::uint64_t>(entropy()) << 32) | entropy();
    return id;
}

std::uint64_t stable_hash(std::string_view text, std::uint64_t basis) {
    std::uint64_t hash = basis;
    for (char const c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;  // FNV-1a's prime
    return hash;
}

}  // namespace axonn
