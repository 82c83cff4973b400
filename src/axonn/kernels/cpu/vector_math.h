// exp and tanh written so that GCC vectorises the loops that call them (AVX-512: 16 floats at a time).
// std::exp / std::tanh are scalar library calls: at GPT-2 sizes, GELU and the vocabulary softmax would cost
// more than the GEMMs around them. The float versions are accurate to a few ulp (Cephes' expf polynomial);
// the double versions, used by the finite-difference tests, call the standard library.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace axonn::cpu {

inline float exp_approx(float x) {
    // exp(x) = 2^n · exp(r), n = round(x / ln 2), |r| ≤ ln(2)/2.
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float const n = std::nearbyint(x * 1.44269504088896341f);
    float const r = x - n * 0.693359375f + n * 2.12194440e-4f;  // ln 2 split into a hi and a lo part
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    std::int32_t const exponent_bits = (static_cast<std::int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(exponent_bits);
}
inline double exp_approx(double x) { return std::exp(x); }

inline float tanh_approx(float x) {
    // tanh(x) = 1 - 2 / (exp(2x) + 1); for large |x| the exp saturates cleanly to ±1.
    return 1.0f - 2.0f / (exp_approx(2.0f * x) + 1.0f);
}
inline double tanh_approx(double x) { return std::tanh(x); }

// The largest of `start` and x[0 .. n), as 16-wide maxima: std::max_element, and std::max under `omp simd`, stay
// scalar loops in GCC.
template <typename T> T maximum_of(T const* x, std::int64_t n, T start) {
    T maximum = start;
#pragma omp simd reduction(max : maximum)
    for (std::int64_t j = 0; j < n; ++j) maximum = x[j] > maximum ? x[j] : maximum;
    return maximum;
}

}  // namespace axonn::cpu
