// bfloat16: the top 16 bits of an IEEE-754 float (8 exponent bits, 7 stored mantissa bits), the GEMM input and
// communication format of mixed precision. Conversion from float rounds to nearest, ties to even; a NaN stays a
// (quiet) NaN.
#pragma once

#include <bit>
#include <cstdint>

namespace axonn {

struct bfloat16 {
    std::uint16_t bits = 0;

    explicit operator float() const { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }
};

inline bfloat16 to_bfloat16(float value) {
    std::uint32_t const bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return {static_cast<std::uint16_t>((bits >> 16) | 0x40u)};  // NaN
    std::uint32_t const rounding = 0x7FFFu + ((bits >> 16) & 1u);
    return {static_cast<std::uint16_t>((bits + rounding) >> 16)};
}

inline float to_float(bfloat16 value) { return static_cast<float>(value); }

}  // namespace axonn
