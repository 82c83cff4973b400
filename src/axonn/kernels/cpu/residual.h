// Residual connection: out = a + b. Its backward hands dout to both inputs, which the decoder does by reading the
// sum's gradient in place (model/decoder_backward.cpp): no kernel.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[n] = a[n] + b[n]
template <typename T> void residual_forward(T* out, T const* a, T const* b, std::int64_t n);

// The residual add and the next norm's statistics in one pass over the rows: sum[N,C] = a + b (sum may be a or
// b), then stats of sum as layernorm_statistics (stats[N,2]) or rmsnorm_statistics (stats[N]) compute them, each
// row's while it is in cache.
template <typename T>
void residual_norm_statistics(T* sum, T const* a, T const* b, double* stats, std::int64_t N, int C, bool layernorm);

}  // namespace axonn::cpu
