#include "axonn/parallel/vocab_parallel.h"

#include "axonn/core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace axonn {
namespace {

// A block's gradient in bf16 and the shard its reduce-scatter returns, with bf16 reduce-scatters over a Z split.
std::int64_t scatter_staging_numel(int z, std::int64_t block_numel, DType scatter_comm) {
    return scatter_comm == DType::bf16 && z > 1 ? block_numel + block_numel / z : 0;
}

// Runs `reduce(group)` over the vocabulary's ranks: Y, then X when the rows split over X too.
template <typename Reduce> void over_vocabulary(ProcessGrid& grid, VocabSlice const& slice, Reduce&& reduce) {
    reduce(grid.comm(Group::y));
    if (slice.over_x) reduce(grid.comm(Group::x));
}

// Whether this process holds the whole vocabulary: over_vocabulary's groups are this rank alone.
bool whole_vocabulary_here(ProcessGrid const& grid, VocabSlice const& slice) {
    return grid.size(Axis::y) == 1 && !slice.over_x;
}

}  // namespace

VocabSplit resolved_vocab_split(VocabSplit split, int width, int padded_vocab, GridShape const& grid, int gemm_bytes) {
    if (split != VocabSplit::automatic) return split;
    if (grid.x == 1) return VocabSplit::xy;
    std::int64_t const hidden_bytes = 4 * std::int64_t{4} * width;                          // per token, over X
    std::int64_t const logit_bytes = 2 * std::int64_t{gemm_bytes} * (padded_vocab / grid.y);  // per token, over X
    return hidden_bytes < logit_bytes ? VocabSplit::xy : VocabSplit::y;
}

VocabBlockShape vocab_block_shape(GridShape const& grid, VocabSplit split, int padded_vocab, int width) {
    bool const over_x = split == VocabSplit::xy && grid.x > 1;
    return {padded_vocab / (grid.y * (over_x ? grid.x : 1)), over_x ? width : width / grid.x, over_x};
}

VocabSlice vocab_slice(ProcessGrid const& grid, VocabSplit split, int padded_vocab, int vocab_size, int width) {
    VocabBlockShape const block = vocab_block_shape(grid.shape(), split, padded_vocab, width);
    int const x = block.over_x ? grid.size(Axis::x) : 1;
    int const slice = grid.coord(Axis::y) * x + (block.over_x ? grid.coord(Axis::x) : 0);
    int const begin = slice * block.rows;
    return {begin, block.rows, std::clamp(vocab_size - begin, 0, block.rows), block.width, block.over_x};
}

void vocab_parallel_embedding_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* out,
                                      VocabScratch scratch, std::int32_t const* tokens, WeightView wte_block,
                                      float const* wpe, int B, int T) {
    Communicator &x = grid.comm(Group::x), &y = grid.comm(Group::y);
    std::int64_t const M = std::int64_t{B} * T, C = slice.width, C_local = slice.over_x ? C / x.size() : C;
    if (!slice.over_x) {
        // The positions are added once over Y, by its first rank.
        backend.encoder_forward(out, tokens, wte_block, y.rank() == 0 ? wpe : nullptr, B, T, static_cast<int>(C),
                                slice.begin, slice.rows);
        y.all_reduce(out, static_cast<std::size_t>(M * C_local));
        return;
    }
    float* whole = scratch.whole;    // [M, C]: the rows held here, zero for the others
    float* blocks = scratch.blocks;  // [G_x, M, C/G_x]
    backend.encoder_forward(whole, tokens, wte_block, nullptr, B, T, static_cast<int>(C), slice.begin, slice.rows);
    backend.split_columns(blocks, whole, M, x.size(), static_cast<int>(C_local));
    x.reduce_scatter(blocks, out, static_cast<std::size_t>(M * C_local));
    y.all_reduce(out, static_cast<std::size_t>(M * C_local));
    if (wpe == nullptr) return;
    // Each of the plane's ranks holds the same sums now: each adds its positions' columns.
    for (int b = 0; b < B; ++b) {
        backend.residual_forward(out + b * T * C_local, out + b * T * C_local, wpe, T * C_local);
    }
}

void vocab_parallel_embedding_backward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* dwte_block,
                                       float* dwpe, float const* dout, VocabScratch scratch,
                                       std::int32_t const* tokens, int B, int T) {
    auto const C = static_cast<int>(slice.width);
    if (!slice.over_x) {
        backend.encoder_backward(dwte_block, dwpe, dout, tokens, B, T, C, slice.begin, slice.rows);
        return;
    }
    Communicator& x = grid.comm(Group::x);
    std::int64_t const M = std::int64_t{B} * T;
    int const C_local = C / x.size();
    float* blocks = scratch.blocks;  // [G_x, M, C/G_x]
    float* whole = scratch.whole;    // [M, C]
    x.all_gather(dout, blocks, static_cast<std::size_t>(M * C_local));
    backend.join_columns(whole, blocks, M, x.size(), C_local);
    backend.encoder_backward(dwte_block, nullptr, whole, tokens, B, T, C, slice.begin, slice.rows);
    // The positions' gradient from this rank's own columns (no vocabulary rows: only dwpe accumulates).
    if (dwpe != nullptr) backend.encoder_backward(dwte_block, dwpe, dout, tokens, B, T, C_local, slice.begin, 0);
}

float const* vocab_parallel_head_input(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* head_input,
                                       float* scratch, float const* final_norm, std::int64_t M) {
    if (!slice.over_x) return final_norm;
    Communicator& x = grid.comm(Group::x);
    int const C_local = slice.width / x.size();
    x.all_gather(final_norm, scratch, static_cast<std::size_t>(M * C_local));
    backend.join_columns(head_input, scratch, M, x.size(), C_local);
    return head_input;
}

void vocab_parallel_logits(Backend& backend, LinearGroups const& groups, bool overlap, VocabSlice const& slice,
                           float* logits, float const* head_input, WeightView head_block, std::int64_t M) {
    if (slice.over_x) {
        backend.linear_forward(logits, head_input, head_block, nullptr, M, slice.width, slice.rows);
        return;
    }
    parallel_linear_forward(backend, groups, overlap, logits, head_input, head_block, nullptr, M, slice.width,
                            slice.rows);
}

void vocab_parallel_head_input_gradient(Backend& backend, LinearGroups const& groups, bool overlap,
                                        VocabSlice const& slice, float* d_final_norm, float* d_head_input,
                                        float* scratch, GemmInput dlogits, WeightView head_block, std::int64_t M,
                                        std::function<void(GemmInput dlogits)> const& weight_gradient) {
    if (!slice.over_x) {
        parallel_input_gradient(backend, groups, overlap, d_final_norm, dlogits, head_block, M, slice.width,
                                slice.rows, weight_gradient);
        return;
    }
    // The X group is the Linear's input-feature group, Y its output group (a normal Linear's).
    Communicator &x = groups.in_features, &y = groups.out_features;
    int const C_local = slice.width / x.size();
    weight_gradient(dlogits);
    backend.linear_backward_input(d_head_input, dlogits, head_block, M, slice.width, slice.rows);
    backend.split_columns(scratch, d_head_input, M, x.size(), C_local);
    x.reduce_scatter(scratch, d_final_norm, static_cast<std::size_t>(M * C_local));
    y.all_reduce(d_final_norm, static_cast<std::size_t>(M * C_local));
}

void vocab_parallel_cross_entropy_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* losses,
                                          float* logsumexp, float* row_max, double* sums, float const* logits,
                                          std::int32_t const* targets, std::int64_t N) {
    if (whole_vocabulary_here(grid, slice)) {  // nothing to all-reduce between the maxima and the sums
        backend.cross_entropy_max_and_sums(row_max, sums, logits, targets, N, slice.valid, slice.rows, slice.begin);
    } else {
        backend.cross_entropy_max(row_max, logits, N, slice.valid, slice.rows);
        over_vocabulary(grid, slice,
                        [&](Communicator& group) { group.all_reduce_max(row_max, static_cast<std::size_t>(N)); });
        backend.cross_entropy_sums(sums, logits, row_max, targets, N, slice.valid, slice.rows, slice.begin);
        over_vocabulary(grid, slice,
                        [&](Communicator& group) { group.all_reduce(sums, static_cast<std::size_t>(2 * N)); });
    }
    backend.cross_entropy_losses(losses, logsumexp, row_max, sums, targets, N);
}

GemmInput vocab_parallel_cross_entropy(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* losses,
                                       float* logsumexp, float* row_max, double* sums, float* logits,
                                       std::int32_t const* targets, float const* dlosses, std::int64_t N) {
    if (whole_vocabulary_here(grid, slice)) {
        AXONN_INVARIANT(slice.begin == 0, "the whole vocabulary starts at id 0, not {}", slice.begin);
        return backend.cross_entropy_forward_backward(losses, logsumexp, logits, logits, targets, dlosses, N,
                                                      slice.valid, slice.rows);
    }
    vocab_parallel_cross_entropy_forward(backend, grid, slice, losses, logsumexp, row_max, sums, logits, targets, N);
    return backend.cross_entropy_backward(logits, logits, logsumexp, targets, dlosses, N, slice.valid, slice.rows,
                                          slice.begin);
}

std::vector<float> gather_vocabulary_row(ProcessGrid& grid, VocabSlice const& slice, float const* logits) {
    // The X ranks' slices of one Y rank are consecutive: gathered over X first, their runs then over Y.
    std::vector<float> run(logits, logits + slice.rows);
    if (slice.over_x) {
        Communicator& x = grid.comm(Group::x);
        std::vector<float> gathered(run.size() * x.size());
        x.all_gather(run.data(), gathered.data(), run.size());
        run = std::move(gathered);
    }
    Communicator& y = grid.comm(Group::y);
    std::vector<float> full(run.size() * y.size());
    y.all_gather(run.data(), full.data(), run.size());
    return full;
}

void vocab_parallel_argmax(ProcessGrid& grid, VocabSlice const& slice, std::span<float const* const> rows,
                           std::int32_t* out) {
    std::size_t const count = rows.size();
    std::vector<float> best(count);
    std::vector<double> best_id(count);
    for (std::size_t i = 0; i < count; ++i) {
        float const* row = rows[i];
        int const local = static_cast<int>(std::max_element(row, row + slice.valid) - row);  // the first maximum
        best[i] = slice.valid > 0 ? row[local] : -std::numeric_limits<float>::infinity();
        best_id[i] = slice.begin + local;
    }
    std::vector<float> const mine = best;
    over_vocabulary(grid, slice, [&](Communicator& group) { group.all_reduce_max(best.data(), count); });
    for (std::size_t i = 0; i < count; ++i) {
        if (mine[i] != best[i]) best_id[i] = std::numeric_limits<double>::infinity();  // another slice holds it
    }
    over_vocabulary(grid, slice, [&](Communicator& group) { group.all_reduce_min(best_id.data(), count); });
    for (std::size_t i = 0; i < count; ++i) {
        // No slice held the maximum: the logits are NaN, and so are the weights.
        AXONN_REQUIRE(std::isfinite(best_id[i]), "the model's logits are not finite: its weights are damaged (NaN)");
        out[i] = static_cast<std::int32_t>(best_id[i]);
    }
}

VocabBlocks::VocabBlocks(ProcessGrid& grid, Backend& backend, int blocks, std::int64_t block_numel, DType precision,
                         DType scatter_comm, bool overlap)
    : grid_(grid), backend_(backend), precision_(precision), scatter_comm_(scatter_comm), overlap_(overlap),
      z_split_(grid.size(Axis::z) > 1),
      scatter_staging_({buffer_numel(scatter_staging_numel(grid.size(Axis::z), block_numel, scatter_comm))},
                       DType::bf16, backend.memory()) {
    AXONN_INVARIANT(blocks == 1 || blocks == 2, "a model has 1 or 2 vocabulary blocks, not {}", blocks);
    std::int64_t const numel = buffer_numel(z_split_ ? block_numel : 0);
    for (int which = 0; which < blocks; ++which) {
        gathered_[which] = Tensor({numel}, precision, backend.memory());
        gradients_[which] = Tensor({numel}, DType::f32, backend.memory());
    }
}

std::int64_t VocabBlocks::workspace_bytes(int z, int blocks, std::int64_t block_numel, DType precision,
                                          DType scatter_comm) {
    std::int64_t const numel = buffer_numel(z > 1 ? block_numel : 0);
    return blocks * numel * static_cast<std::int64_t>(dtype_size(precision) + sizeof(float)) +
           buffer_numel(scatter_staging_numel(z, block_numel, scatter_comm)) *
               static_cast<std::int64_t>(sizeof(bfloat16));
}

void VocabBlocks::start_gathers(std::span<void const* const> shards, std::span<std::int64_t const> shard_numel) {
    Communicator& z = grid_.comm(Group::z_prefetch);
    for (std::size_t which = 0; which < shards.size(); ++which) {
        auto const count = static_cast<std::size_t>(z_split_ ? shard_numel[which] : 0);
        gathers_.push_back(z.start_all_gather(shards[which], gathered_[which].raw_data(), precision_, count));
        if (!overlap_) gathers_.back().wait();
    }
}

void VocabBlocks::wait_gathers() {
    for (Collective& gather : gathers_) gather.wait();
    gathers_.clear();
}

WeightView VocabBlocks::block(int which, void const* shard) const {
    return {z_split_ ? gathered_[which].raw_data() : shard, precision_};
}

float* VocabBlocks::gradient(int which, float* shard_gradient) {
    return z_split_ ? gradients_[which].data<float>() : shard_gradient;
}

void VocabBlocks::start_gradient(int which, float* shard_gradient, std::int64_t shard_numel, GradWrite write) {
    if (!z_split_) return;
    // The gathered block is no longer needed: it takes the scattered sum to add (a shard, 1/G_z of the block: its
    // bytes suffice in bf16 too).
    auto* gathered = static_cast<float*>(gathered_[which].raw_data());
    bool const add = write == GradWrite::accumulate;
    Communicator& z = grid_.comm(Group::z);
    // Where the sum rounds, the staging copy holds the block in bf16, then the shard that arrives.
    bfloat16* sent = rounds(z, scatter_comm_) ? scatter_staging_.data<bfloat16>() : nullptr;
    Scatter& scatter = scatters_[which];
    scatter.sum = start_rounded_reduce_scatter(backend_, z, scatter_comm_, gradients_[which].data<float>(),
                                               add ? gathered : shard_gradient, static_cast<std::size_t>(shard_numel),
                                               sent, sent ? sent + shard_numel * z.size() : nullptr);
    scatter.shard_gradient = add ? shard_gradient : nullptr;
    scatter.shard_numel = shard_numel;
}

void VocabBlocks::finish_gradient(int which) {
    if (!z_split_) return;
    Scatter& scatter = scatters_[which];
    scatter.sum.wait();
    if (scatter.shard_gradient == nullptr) return;
    backend_.residual_forward(scatter.shard_gradient, scatter.shard_gradient,
                              static_cast<float const*>(gathered_[which].raw_data()), scatter.shard_numel);
    scatter.shard_gradient = nullptr;
}

std::int32_t agreed_token(ProcessGrid& grid, std::int32_t token) {
    double chosen = token;  // exact: ids are below 2^31, and collectives move floating-point numbers
    for (Group const group : {Group::y, Group::x}) {
        if (grid.shape().size(group) > 1) grid.comm(group).all_reduce_min(&chosen, 1);
    }
    return static_cast<std::int32_t>(chosen);
}

}  // namespace axonn
