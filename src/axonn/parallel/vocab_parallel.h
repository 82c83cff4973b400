// The embedding and the LM head's loss with the vocabulary split over Y (rows of a [Vp/G_y, C/G_x] block). The
// rank that holds a token's row looks it up, the others contribute zero, and an all-reduce over Y completes the
// embedding. The cross-entropy all-reduces each token's maximum logit (max) and its (Σ exp, target logit) (sum)
// over Y, so no rank ever holds a whole row of logits. Each of these all-reduces is blocking: its result is the
// very next computation's input (the first layer's, the loss's).
//
// The blocks themselves are held as 1/G_z shards on each Z rank: VocabBlocks gathers them over Z once a pass (they
// stay from the lookup to the LM head and through the backward) and reduce-scatters their gradients over Z.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/rounded_sum.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace axonn {

struct VocabSlice {
    int begin;  // global id of this rank's first row
    int rows;   // Vp / G_y
    int valid;  // rows that are real words (the rest pad the vocabulary)
};

// This rank's slice of a vocabulary of `vocab_size` words padded to `padded_vocab` rows.
VocabSlice vocab_slice(ProcessGrid const& grid, int padded_vocab, int vocab_size);

// out[B,T,C/G_x] = embedding of each token + position (wpe is passed by one Y rank only, else null)
void vocab_parallel_embedding_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* out,
                                      std::int32_t const* tokens, WeightView wte_block, float const* wpe, int B, int T,
                                      int C_local);

// losses[N], logsumexp[N] of this process's tokens from logits[N, slice.rows]; row_max[N] and sums[N,2] scratch
void vocab_parallel_cross_entropy_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* losses,
                                          float* logsumexp, float* row_max, double* sums, float const* logits,
                                          std::int32_t const* targets, std::int64_t N);

// One token's logits over the whole vocabulary, on every Y rank: the ranks' slices logits[slice.rows] gathered
// (padding ids included).
std::vector<float> gather_vocabulary_row(ProcessGrid& grid, VocabSlice const& slice, float const* logits);

// The token every rank of this rank's X·Y plane (one data × z replica) takes: the smallest of their choices. Each
// chooses from its own copy of the gathered logits, which the X all-reduce need not make equal to the bit on every
// rank; a draw that rounding tipped differently on two ranks would send them on different continuations, so the
// plane agrees on one. Collective over the grid's Y and X groups.
std::int32_t agreed_token(ProcessGrid& grid, std::int32_t token);

// out[i] = the most likely word of rows[i] (each [slice.rows], this rank's slice of a token's logits) over the
// whole vocabulary, ties to the smallest id; the same on every Y rank. Logits that are not finite are an error.
void vocab_parallel_argmax(ProcessGrid& grid, VocabSlice const& slice, std::span<float const* const> rows,
                           std::int32_t* out);

// The vocabulary blocks [Vp/G_y, C/G_x] of the embedding (0) and of an untied LM head (1), each gathered over Z
// (in the GEMMs' precision) when Z is split, and their gradients [Vp/G_y, C/G_x] in fp32, reduce-scattered over
// Z into the shards once the backward has finished with them. Without a Z split the shards are the blocks.
class VocabBlocks {
public:
    // blocks: 1 (a tied LM head) or 2; block_numel: Vp/G_y · C/G_x; scatter_comm: the reduce-scatters' wire type.
    VocabBlocks(ProcessGrid& grid, Backend& backend, int blocks, std::int64_t block_numel, DType precision,
                DType scatter_comm, bool overlap);

    // Starts the Z all-gathers of the blocks from their shards (in the GEMMs' precision, of shard_numel each);
    // wait_gathers() completes them. With overlap off each is waited on at once.
    void start_gathers(std::span<void const* const> shards, std::span<std::int64_t const> shard_numel);
    void wait_gathers();
    // The block the GEMMs read: the gathered one, or the shard itself without a Z split.
    WeightView block(int which, void const* shard) const;
    // Where block `which`'s gradient accumulates: its block buffer, or the shard's gradient without a Z split.
    float* gradient(int which, float* shard_gradient);
    // Starts the Z reduce-scatter of block `which`'s gradient into shard_gradient[shard_numel] (written, or added
    // to it); finish_gradient(which) completes it. Nothing to do without a Z split. One at a time in bf16, whose
    // staging they share.
    void start_gradient(int which, float* shard_gradient, std::int64_t shard_numel, GradWrite write);
    void finish_gradient(int which);

    // Bytes these buffers take, for the memory model.
    static std::int64_t workspace_bytes(int z, int blocks, std::int64_t block_numel, DType precision,
                                        DType scatter_comm);

private:
    struct Scatter {
        RoundedSum sum;
        float* shard_gradient = nullptr;  // where the sum is to be added; null when it was written there
        std::int64_t shard_numel = 0;
    };
    ProcessGrid& grid_;
    Backend& backend_;
    DType precision_;
    DType scatter_comm_;
    bool overlap_;
    bool z_split_;
    std::array<Tensor, 2> gathered_;  // in the GEMMs' precision
    std::array<Tensor, 2> gradients_;
    Tensor scatter_staging_;  // with bf16 reduce-scatters: a block rounded, then its scattered shard
    std::vector<Collective> gathers_;
    std::array<Scatter, 2> scatters_;
};

}  // namespace axonn
