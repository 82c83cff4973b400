// Bulk conversion between fp32 and bf16 (the bf16 GEMM is gemm.h's).
#pragma once

#include "axonn/core/bfloat16.h"

#include <cstdint>
#include <type_traits>

namespace axonn::cpu {

// out[n] = bf16(in[n]), rounded to nearest even                                              in[n] fp32
void to_bf16(bfloat16* out, float const* in, std::int64_t n);
// out[n] = float(in[n])                                                                       in[n] bf16
void to_f32(float* out, bfloat16 const* in, std::int64_t n);

// A kernel's result as an output of type Out holds it: itself, or rounded to bf16 as to_bf16 rounds, so that a
// kernel writing bf16 gives exactly what writing fp32 and converting gives.
template <typename Out, typename T> Out stored_as(T value) {
    if constexpr (std::is_same_v<Out, bfloat16>) {
        return to_bfloat16(static_cast<float>(value));
    } else {
        return static_cast<Out>(value);
    }
}

// An input element as a kernel computes with it: bf16 widened (exactly) to T, others as they are.
template <typename T, typename In> T loaded(In value) {
    if constexpr (std::is_same_v<In, bfloat16>) {
        return static_cast<T>(to_float(value));
    } else {
        return static_cast<T>(value);
    }
}

}  // namespace axonn::cpu
