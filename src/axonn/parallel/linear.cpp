#include "axonn/parallel/linear.h"

namespace axonn {

void parallel_linear_forward(Backend& backend, LinearGroups const& groups, float* out, float const* inp,
                             float const* weight_block, float const* bias, std::int64_t M, std::int64_t K_local,
                             std::int64_t N_local) {
    // The partial sums over F are added by the all-reduce; the bias must be added once, by F's first rank.
    float const* bias_here = groups.in_features.rank() == 0 ? bias : nullptr;
    backend.linear_forward(out, inp, weight_block, bias_here, M, K_local, N_local);
    groups.in_features.all_reduce(out, static_cast<std::size_t>(M * N_local));
}

void parallel_linear_backward(Backend& backend, LinearGroups const& groups, GradScatter& scatter, bool overlap,
                              float* dinp, float* dweight_shard, float* dbias, float const* dout, float const* inp,
                              float const* weight_block, std::int64_t M, std::int64_t K_local, std::int64_t N_local,
                              GradWrite write) {
    auto weight_gradient = [&] {
        GradTarget const target = scatter.target(dweight_shard, write);
        backend.linear_backward_weight(target.block, dbias, dout, inp, M, K_local, N_local, target.write);
        scatter.submit(N_local * K_local);
    };
    if (groups.out_features.size() == 1) {
        weight_gradient();
        backend.linear_backward_input(dinp, dout, weight_block, M, K_local, N_local);
        return;
    }
    backend.linear_backward_input(dinp, dout, weight_block, M, K_local, N_local);
    Collective input_gradient = groups.out_features.start_all_reduce(dinp, static_cast<std::size_t>(M * K_local));
    if (!overlap) input_gradient.wait();
    weight_gradient();
    input_gradient.wait();
}

}  // namespace axonn
