// The 3D tensor-parallel Linear layer (AxoNN's algorithm), serial weight [N, K] (PyTorch's [out, in]).
// F is the group that splits the input features, O the group that splits the outputs: X and Y for a normal
// layer, Y and X for a transposed one, so layers alternate and no activation is ever redistributed.
//
//   forward:  W_blk = AllGather_Z(W_shard)                         [N/G_O, K/G_F]
//             out = AllReduce_F(inp · W_blkᵀ) (+ bias once)        [M, N/G_O]   from inp [M, K/G_F]
//   backward: W_blk = AllGather_Z(W_shard)                         (re-gathered: nothing kept between passes)
//             dinp = AllReduce_O(dout · W_blk)                     [M, K/G_F]
//             dW_shard = ReduceScatter_Z(doutᵀ · inp)              [N·K/(G_O·G_F·G_z)]
//             dbias += Σ_rows dout                                 (summed over Z and data by gradient sync)
// With every group of size one this is exactly the serial layer: no copies, no collectives.
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/kernels/backend.h"

#include <cstdint>

namespace axonn {

struct LinearGroups {
    Communicator& in_features;   // F
    Communicator& out_features;  // O
    Communicator& z;
};

// Buffers of one weight block [N/G_O, K/G_F], needed only when G_z > 1 (else they may be null).
struct LinearWorkspace {
    float* gathered_weight;
    float* weight_grad_block;
};

// out[M, N_local] = AllReduce_F(inp[M, K_local] · W_blkᵀ) + bias[N_local] (bias may be null)
void parallel_linear_forward(Backend& backend, LinearGroups const& groups, LinearWorkspace const& workspace,
                             float* out, float const* inp, float const* weight_shard, float const* bias,
                             std::int64_t M, std::int64_t K_local, std::int64_t N_local);

// dinp[M, K_local] must be zero on entry (it is all-reduced in place); dweight_shard is written or accumulated
// as `write` says; dbias[N_local] accumulates.      dout[M, N_local], inp[M, K_local]
void parallel_linear_backward(Backend& backend, LinearGroups const& groups, LinearWorkspace const& workspace,
                              float* dinp, float* dweight_shard, float* dbias, float const* dout, float const* inp,
                              float const* weight_shard, std::int64_t M, std::int64_t K_local, std::int64_t N_local,
                              GradWrite write);

}  // namespace axonn
