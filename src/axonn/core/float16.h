// IEEE 754 binary16, the F16 of safetensors files: only ever read, widened to fp32, which holds every binary16 value
// exactly. Written out here because not every compiler axonn is built with has a 16-bit float type (clang 14 has no
// _Float16 on x86-64).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace axonn {

inline float float16_to_float(std::uint16_t bits) {
    std::uint32_t const sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    std::uint32_t const exponent = (bits >> 10) & 0x1fu;
    std::uint32_t const mantissa = bits & 0x3ffu;
    if (exponent == 0) {  // zero or subnormal: mantissa · 2^-24, exact in fp32
        float const magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign != 0 ? -magnitude : magnitude;
    }
    // Infinity and NaN keep an all-ones exponent (a NaN's payload moves up with it); the rest are rebiased 15 → 127.
    std::uint32_t const widened_exponent = exponent == 0x1fu ? 0xffu : exponent + (127 - 15);
    return std::bit_cast<float>(sign | widened_exponent << 23 | mantissa << 13);
}

}  // namespace axonn
