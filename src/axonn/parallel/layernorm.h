// Exact LayerNorm with the channels split over X: each token's (Σx, Σx²), and in the backward its
// (Σ dnorm, Σ dnorm·norm), are all-reduced over X, so every rank normalises with the statistics of the
// whole row. (AxoNN normalises each slice on its own, which is a different function; not copied here.)
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/kernels/backend.h"

#include <cstdint>

namespace axonn {

// out[N,C_local], mean[N], rstd[N] from inp[N,C_local], weight[C_local], bias[C_local]; stats: scratch [N,2]
void parallel_layernorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out, float* mean,
                                float* rstd, float const* inp, float const* weight, float const* bias, std::int64_t N,
                                int C_local, int C_total);
// Its phases after the statistics, once stats[N,2] holds this rank's sums (from layernorm_statistics, or from a
// residual add fused with them): the all-reduce over X and the normalisation.
void complete_parallel_layernorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out,
                                         float* mean, float* rstd, float const* inp, float const* weight,
                                         float const* bias, std::int64_t N, int C_local, int C_total);

// dinp[N,C_local] += ..., dweight[C_local] += ..., dbias[C_local] += ...; stats: scratch [N,2]
void parallel_layernorm_backward(Backend& backend, Communicator& x, double* stats, float* dinp, float* dweight,
                                 float* dbias, float const* dout, float const* inp, float const* weight,
                                 float const* mean, float const* rstd, std::int64_t N, int C_local, int C_total);

}  // namespace axonn
