// AdamW (Loshchilov & Hutter), exactly as torch.optim.AdamW: bias-corrected moments and decoupled weight decay.
#pragma once

#include "axonn/kernels/types.h"

#include <cstdint>

namespace axonn::cpu {

// param[n] -= lr · (weight_decay · param + m̂ / (sqrt(v̂) + eps)), updating m[n] and v[n]      grad[n]
// param_bf16[n], when not null, = bf16(param) after the update (the GEMMs' copy, refreshed in the same pass)
void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWStep const& step,
                  bfloat16* param_bf16 = nullptr);

// Σ x², accumulated in double so the global gradient norm does not depend on the order of 10⁸ additions.
double sum_of_squares(float const* x, std::int64_t n);

}  // namespace axonn::cpu
