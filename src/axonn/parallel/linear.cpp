#include "axonn/parallel/linear.h"

#include "axonn/parallel/rounded_sum.h"

#include <algorithm>
#include <vector>

namespace axonn {

namespace {

// Runs `compute(first_row, rows)` for each chunk of M rows, starting the all-reduce over `group` of the chunk's
// `width` columns of `out` right after it; then `meanwhile()`; then waits for them all (each at once with overlap
// off). With a staging buffer the sums run in bf16 there (rounded_sum.h).
template <typename Compute, typename Meanwhile>
void chunked_all_reduce(Backend& backend, Communicator& group, bfloat16* staging, bool overlap, float* out,
                        std::int64_t M, std::int64_t width, Compute&& compute, Meanwhile&& meanwhile) {
    int const chunks = group.size() > 1 ? linear_row_chunks(M) : 1;
    DType const wire = staging != nullptr ? DType::bf16 : DType::f32;
    std::vector<RoundedSum> sums;
    for (int c = 0; c < chunks; ++c) {
        std::int64_t const first = M * c / chunks, rows = M * (c + 1) / chunks - first;
        compute(first, rows);
        sums.push_back(start_rounded_all_reduce(backend, group, wire, out + first * width,
                                                static_cast<std::size_t>(rows * width),
                                                staging != nullptr ? staging + first * width : nullptr));
        if (!overlap) sums.back().wait();
    }
    meanwhile();
    for (RoundedSum& sum : sums) sum.wait();
}

}  // namespace

LinearGroups linear_groups(ProcessGrid& grid, bool transposed, bfloat16* bf16_staging) {
    Communicator &x = grid.comm(Group::x), &y = grid.comm(Group::y);
    return transposed ? LinearGroups{y, x, bf16_staging} : LinearGroups{x, y, bf16_staging};
}

int linear_row_chunks(std::int64_t M) { return static_cast<int>(std::clamp<std::int64_t>(M / 256, 1, 4)); }

void parallel_linear_forward(Backend& backend, LinearGroups const& groups, bool overlap, float* out, GemmInput inp,
                             WeightView weight_block, float const* bias, std::int64_t M, std::int64_t K_local,
                             std::int64_t N_local) {
    // The partial sums over F are added by the all-reduce; the bias must be added once, by F's first rank.
    float const* bias_here = groups.in_features.rank() == 0 ? bias : nullptr;
    chunked_all_reduce(
        backend, groups.in_features, groups.bf16_staging, overlap, out, M, N_local,
        [&](std::int64_t first, std::int64_t rows) {
            backend.linear_forward(out + first * N_local, inp.rows_from(first, K_local), weight_block, bias_here, rows,
                                   K_local, N_local);
        },
        [] {});
}

void parallel_input_gradient(Backend& backend, LinearGroups const& groups, bool overlap, float* dinp,
                             GemmInput gemm_dout, WeightView weight_block, std::int64_t M, std::int64_t K_local,
                             std::int64_t N_local, std::function<void(GemmInput dout)> const& weight_gradient) {
    auto input_gradient = [&](std::int64_t first, std::int64_t rows) {
        backend.linear_backward_input(dinp + first * K_local, gemm_dout.rows_from(first, N_local), weight_block, rows,
                                      K_local, N_local);
    };
    if (groups.out_features.size() == 1) {  // nothing to all-reduce: the weight gradient's reduce-scatter goes first
        weight_gradient(gemm_dout);
        input_gradient(0, M);
        return;
    }
    chunked_all_reduce(backend, groups.out_features, groups.bf16_staging, overlap, dinp, M, K_local, input_gradient,
                       [&] { weight_gradient(gemm_dout); });
}

void parallel_linear_backward(Backend& backend, LinearGroups const& groups, GradScatter& scatter, bool overlap,
                              float* dinp, float* dweight_shard, float* dbias, GemmInput dout, GemmInput inp,
                              WeightView weight_block, std::int64_t M, std::int64_t K_local, std::int64_t N_local,
                              GradWrite write) {
    parallel_input_gradient(backend, groups, overlap, dinp, dout, weight_block, M, K_local, N_local,
                            [&](GemmInput gemm_dout) {
        GradTarget const target = scatter.target(dweight_shard, write);
        backend.linear_backward_weight(target.block, dbias, gemm_dout, inp, M, K_local, N_local, target.write);
        scatter.submit(N_local * K_local);
    });
}

}  // namespace axonn
