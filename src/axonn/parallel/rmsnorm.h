// Exact RMSNorm with the channels split over X: each token's Σx², and in the backward its Σ dnorm·norm, are
// all-reduced over X, so every rank normalises with the statistics of the whole row (as parallel/layernorm.h).
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/kernels/backend.h"

#include <cstdint>

namespace axonn {

// out[N,C_local], rstd[N] from inp[N,C_local], weight[C_local]; stats: scratch [N]
void parallel_rmsnorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out, float* rstd,
                              float const* inp, float const* weight, std::int64_t N, int C_local, int C_total,
                              double eps);
// Its phases after the statistics, once stats[N] holds this rank's sums (from rmsnorm_statistics, or from a
// residual add fused with them): the all-reduce over X and the normalisation.
void complete_parallel_rmsnorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out, float* rstd,
                                       float const* inp, float const* weight, std::int64_t N, int C_local,
                                       int C_total, double eps);

// dinp[N,C_local] += ..., dweight[C_local] += ...; stats: scratch [N]
void parallel_rmsnorm_backward(Backend& backend, Communicator& x, double* stats, float* dinp, float* dweight,
                               float const* dout, float const* inp, float const* weight, float const* rstd,
                               std::int64_t N, int C_local, int C_total);

}  // namespace axonn
