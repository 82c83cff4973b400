// The 3D tensor-parallel Linear layer (AxoNN's algorithm), serial weight [N, K] (PyTorch's [out, in]).
// F is the group that splits the input features, O the group that splits the outputs: X and Y for a normal
// layer, Y and X for a transposed one, so layers alternate and no activation is ever redistributed.
//
//   forward:  W_blk = AllGather_Z(W_shard)                         [N/G_O, K/G_F]   (weight_gather.h)
//             out = AllReduce_F(inp · W_blkᵀ) (+ bias once)        [M, N/G_O]       from inp [M, K/G_F]
//   backward: W_blk = AllGather_Z(W_shard)                         (re-gathered, or cached)
//             dinp = AllReduce_O(dout · W_blk)                     [M, K/G_F]   started, then, while it runs:
//             dW_blk = doutᵀ · inp; ReduceScatter_Z(dW_blk)        [N·K/(G_O·G_F·G_z)]   (grad_scatter.h)
//             dbias += Σ_rows dout                                 (summed over Z and data by gradient sync)
// The dinp all-reduce overlapping the dW GEMM is AxoNN's OAR; with overlap off it is waited on at once. When O
// has one member there is no dinp all-reduce, and the dW GEMM goes first so that its reduce-scatter runs under
// the dinp GEMM instead. With every group of size one this is exactly the serial layer.
//
// Beyond AxoNN, whose forward all-reduce blocks: the rows are cut into chunks (linear_row_chunks), and each
// chunk's all-reduce starts as soon as its GEMM is done, so it runs under the next chunks' GEMMs; the same for
// dinp in the backward, whose chunks then also run under the dW GEMM. The chunking depends on M alone, never on
// overlap, so that overlap on and off compute bitwise the same.
//
// In mixed precision (the backend's GEMMs take bf16) these all-reduces run in bf16, half the bytes: each chunk
// of the fp32 output is rounded into a staging buffer, summed there and widened back.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/grad_scatter.h"

#include <cstdint>
#include <functional>

namespace axonn {

struct LinearGroups {
    Communicator& in_features;   // F
    Communicator& out_features;  // O
    // [M, widest output or input gradient] bf16, for the all-reduces in mixed precision; null in fp32
    bfloat16* bf16_staging = nullptr;
};

// A normal Linear's groups (F = X, O = Y) or a transposed one's (F = Y, O = X) on this grid.
LinearGroups linear_groups(ProcessGrid& grid, bool transposed, bfloat16* bf16_staging = nullptr);

// Into how many chunks of rows a Linear of M rows cuts its all-reduced output: enough rows per chunk (256) for the
// GEMM to stay efficient, at most 4. The traffic model counts the all-reduces with it.
int linear_row_chunks(std::int64_t M);

// out[M, N_local] = AllReduce_F(inp[M, K_local] · weight_block[N_local, K_local]ᵀ) + bias[N_local] (bias may be
// null); inp fp32, or (mixed precision) held only in bf16
void parallel_linear_forward(Backend& backend, LinearGroups const& groups, bool overlap, float* out, GemmInput inp,
                             WeightView weight_block, float const* bias, std::int64_t M, std::int64_t K_local,
                             std::int64_t N_local);

// dinp[M, K_local] = AllReduce_O(dout[M, N_local] · weight_block[N_local, K_local]) (O: groups.out_features), in
// chunks whose all-reduces run under the later chunks and under `weight_gradient(dout)`, which computes the layer's
// weight gradient meanwhile (first, when O has one member) from the same GEMM input (Backend::gemm_input: in
// mixed precision dout rounded once for both). For a weight whose gradient is not reduce-scattered at once (the
// LM head's).
void parallel_input_gradient(Backend& backend, LinearGroups const& groups, bool overlap, float* dinp,
                             GemmInput dout, WeightView weight_block, std::int64_t M, std::int64_t K_local,
                             std::int64_t N_local, std::function<void(GemmInput dout)> const& weight_gradient);

// dinp[M, K_local] is written (all-reduced over O); the weight gradient goes through `scatter` into
// dweight_shard, written or accumulated as `write` says; dbias[N_local] accumulates (may be null; it needs dout's
// fp32 values). dout[M, N_local] as the GEMMs read it (Backend::gemm_input), inp[M, K_local] (as the forward read
// it), weight_block[N_local, K_local]
void parallel_linear_backward(Backend& backend, LinearGroups const& groups, GradScatter& scatter, bool overlap,
                              float* dinp, float* dweight_shard, float* dbias, GemmInput dout, GemmInput inp,
                              WeightView weight_block, std::int64_t M, std::int64_t K_local, std::int64_t N_local,
                              GradWrite write);

}  // namespace axonn
