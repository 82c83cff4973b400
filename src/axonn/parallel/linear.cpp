#include "axonn/parallel/linear.h"

namespace axonn {
namespace {

// W_blk[N_local, K_local]: the shard itself when Z is not split, else its all-gather over Z.
float const* gather_weight(LinearGroups const& groups, LinearWorkspace const& workspace, float const* weight_shard,
                           std::int64_t block_numel) {
    if (groups.z.size() == 1) return weight_shard;
    groups.z.all_gather(weight_shard, workspace.gathered_weight, static_cast<std::size_t>(block_numel / groups.z.size()));
    return workspace.gathered_weight;
}

}  // namespace

void parallel_linear_forward(Backend& backend, LinearGroups const& groups, LinearWorkspace const& workspace,
                             float* out, float const* inp, float const* weight_shard, float const* bias,
                             std::int64_t M, std::int64_t K_local, std::int64_t N_local) {
    float const* weight = gather_weight(groups, workspace, weight_shard, N_local * K_local);
    // The partial sums over F are added by the all-reduce; the bias must be added once, by F's first rank.
    float const* bias_here = groups.in_features.rank() == 0 ? bias : nullptr;
    backend.linear_forward(out, inp, weight, bias_here, M, K_local, N_local);
    groups.in_features.all_reduce(out, static_cast<std::size_t>(M * N_local));
}

void parallel_linear_backward(Backend& backend, LinearGroups const& groups, LinearWorkspace const& workspace,
                              float* dinp, float* dweight_shard, float* dbias, float const* dout, float const* inp,
                              float const* weight_shard, std::int64_t M, std::int64_t K_local, std::int64_t N_local,
                              GradWrite write) {
    std::int64_t const block_numel = N_local * K_local;
    float const* weight = gather_weight(groups, workspace, weight_shard, block_numel);
    if (groups.z.size() == 1) {
        backend.linear_backward(dinp, dweight_shard, dbias, dout, inp, weight, M, K_local, N_local, write);
    } else {
        // The full block's gradient first; then each Z rank keeps the sum of its chunk.
        backend.linear_backward(dinp, workspace.weight_grad_block, dbias, dout, inp, weight, M, K_local, N_local,
                                GradWrite::overwrite);
        auto const shard_numel = static_cast<std::size_t>(block_numel / groups.z.size());
        if (write == GradWrite::overwrite) {
            groups.z.reduce_scatter(workspace.weight_grad_block, dweight_shard, shard_numel);
        } else {
            // The gathered weight is no longer needed: its buffer holds the scattered sum until it is added.
            groups.z.reduce_scatter(workspace.weight_grad_block, workspace.gathered_weight, shard_numel);
            backend.residual_forward(dweight_shard, dweight_shard, workspace.gathered_weight,
                                     static_cast<std::int64_t>(shard_numel));
        }
    }
    groups.out_features.all_reduce(dinp, static_cast<std::size_t>(M * K_local));
}

}  // namespace axonn
