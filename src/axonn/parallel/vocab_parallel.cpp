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

}  // namespace

VocabSlice vocab_slice(ProcessGrid const& grid, int padded_vocab, int vocab_size) {
    int const rows = padded_vocab / grid.size(Axis::y);
    int const begin = grid.coord(Axis::y) * rows;
    return {begin, rows, std::clamp(vocab_size - begin, 0, rows)};
}

void vocab_parallel_embedding_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* out,
                                      std::int32_t const* tokens, WeightView wte_block, float const* wpe, int B, int T,
                                      int C_local) {
    backend.encoder_forward(out, tokens, wte_block, wpe, B, T, C_local, slice.begin, slice.rows);
    grid.comm(Group::y).all_reduce(out, static_cast<std::size_t>(B) * T * C_local);
}

void vocab_parallel_cross_entropy_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* losses,
                                          float* logsumexp, float* row_max, double* sums, float const* logits,
                                          std::int32_t const* targets, std::int64_t N) {
    Communicator& y = grid.comm(Group::y);
    backend.cross_entropy_max(row_max, logits, N, slice.valid, slice.rows);
    y.all_reduce_max(row_max, static_cast<std::size_t>(N));
    backend.cross_entropy_sums(sums, logits, row_max, targets, N, slice.valid, slice.rows, slice.begin);
    y.all_reduce(sums, static_cast<std::size_t>(2 * N));
    backend.cross_entropy_losses(losses, logsumexp, row_max, sums, targets, N);
}

std::vector<float> gather_vocabulary_row(ProcessGrid& grid, VocabSlice const& slice, float const* logits) {
    Communicator& y = grid.comm(Group::y);
    std::vector<float> full(static_cast<std::size_t>(slice.rows) * y.size());
    y.all_gather(logits, full.data(), static_cast<std::size_t>(slice.rows));
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
    Communicator& y = grid.comm(Group::y);
    y.all_reduce_max(best.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
        if (mine[i] != best[i]) best_id[i] = std::numeric_limits<double>::infinity();  // another slice holds it
    }
    y.all_reduce_min(best_id.data(), count);
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
