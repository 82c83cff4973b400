// Residual connection: out = a + b, and its backward, which hands dout to both branches.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[n] = a[n] + b[n]
template <typename T> void residual_forward(T* out, T const* a, T const* b, std::int64_t n);

// da[n] += dout[n]; db[n] += dout[n]
template <typename T> void residual_backward(T* da, T* db, T const* dout, std::int64_t n);

}  // namespace axonn::cpu
