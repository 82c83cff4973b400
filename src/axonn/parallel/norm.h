// A decoder's normalisation over X, as its family has it: exact LayerNorm (GPT-2; layernorm.h) or RMSNorm
// (Llama; rmsnorm.h), each token's channels split over X and its statistics all-reduced there. The all-reduce is
// blocking: the normalised row is the next GEMM's input, so nothing is left to compute under it.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/kernels/backend.h"

#include <cstdint>

namespace axonn {

struct NormSpec {
    bool layernorm = true;  // LayerNorm with a bias; else RMSNorm (no mean, no bias)
    int width = 0;          // C, the whole row's channels
    double eps = 1e-5;      // RMSNorm's
};

// out[N, C/G_x] (fp32, or bf16 for GEMMs alone), mean[N] (LayerNorm only), rstd[N] from inp[N, C/G_x],
// weight[C/G_x], bias[C/G_x] (null for RMSNorm); stats: scratch [N, 2]
void parallel_norm_forward(Backend& backend, ProcessGrid& grid, NormSpec const& spec, double* stats, OperandOut out,
                           float* mean, float* rstd, float const* inp, float const* weight, float const* bias,
                           std::int64_t N);

// A residual add whose sum the norm reads at once: sum[N, C/G_x] = a + b (sum may be a or b).
struct ResidualAdd {
    float* sum;
    float const* a;
    float const* b;
};

// The residual add, then the norm of its sum as parallel_norm_forward computes it: the add and the statistics
// in one pass over the rows (Backend::residual_norm_statistics).
void parallel_residual_norm_forward(Backend& backend, ProcessGrid& grid, NormSpec const& spec, double* stats,
                                    ResidualAdd const& residual, OperandOut out, float* mean, float* rstd,
                                    float const* weight, float const* bias, std::int64_t N);

// dinp[N, C/G_x] += ..., dweight[C/G_x] += ..., dbias[C/G_x] += ... (LayerNorm only); stats: scratch [N, 2]
void parallel_norm_backward(Backend& backend, ProcessGrid& grid, NormSpec const& spec, double* stats, float* dinp,
                            float* dweight, float* dbias, float const* dout, float const* inp, float const* weight,
                            float const* mean, float const* rstd, std::int64_t N);

}  // namespace axonn
