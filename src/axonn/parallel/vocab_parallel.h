// The embedding and the LM head with their vocabulary split by rows, in one of two layouts (VocabSplit,
// param_decl.h):
//
//   y   AxoNN's: a [Vp/G_y, C/G_x] block of rows over Y and columns over X.
//         embedding  out[M, C/G_x] = AllReduce_Y(lookup of the tokens' rows held here)
//         logits     [M, Vp/G_y] = AllReduce_X(final_norm[M, C/G_x] · blockᵀ)       (a normal Linear's)
//         backward   d_final_norm = AllReduce_Y(dlogits · block); the lookup's gradient into its rows
//   xy  rows over the whole X·Y plane (slice y·G_x + x), every column: a [Vp/(G_x·G_y), C] block.
//         embedding  out[M, C/G_x] = AllReduce_Y(ReduceScatter_X(lookup[M, C] in X column blocks))
//         logits     [M, Vp/(G_x·G_y)] = AllGather_X(final_norm)[M, C] · blockᵀ      (nothing summed)
//         backward   d_final_norm = AllReduce_Y(ReduceScatter_X(dlogits · block)); the lookup's gradient from
//                    AllGather_X(dout)[M, C]
//       X then moves M·C numbers a pass each way instead of M·Vp/G_y logits: Vp/(2·G_y·C) times fewer.
// A token's whole row of logits is never on one rank: the cross-entropy all-reduces each token's maximum logit
// (max) and its (Σ exp, target logit) (sum) over the vocabulary's ranks (Y, then X in the xy layout). Each of
// these collectives is blocking: its result is the very next computation's input (the first layer's, the loss's).
// With G_x = 1 the two layouts are one and the same.
//
// The blocks themselves are held as 1/G_z shards on each Z rank: VocabBlocks gathers them over Z once a pass (they
// stay from the lookup to the LM head and through the backward) and reduce-scatters their gradients over Z.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/linear.h"
#include "axonn/parallel/param_decl.h"
#include "axonn/parallel/rounded_sum.h"

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace axonn {

// The layout `split` names; `automatic` resolved for a model `width` wide with `padded_vocab` rows on `grid`, whose
// GEMMs take operands of `gemm_bytes`: the one that moves fewer bytes over X in a step. The y layout all-reduces
// M·Vp/G_y logits in the GEMMs' type once (a ring moves each twice), the xy layout gathers or reduce-scatters M·C
// fp32 numbers four times: xy when 8·C < gemm_bytes·Vp/G_y, and where X is not split (the two are one).
VocabSplit resolved_vocab_split(VocabSplit split, int width, int padded_vocab, GridShape const& grid, int gemm_bytes);

struct VocabSlice {
    int begin;  // global id of this rank's first row
    int rows;   // Vp / G_y, or Vp / (G_x·G_y) over the X·Y plane
    int valid;  // rows that are real words (the rest pad the vocabulary)
    int width;  // the block's columns: C / G_x, or C over the X·Y plane
    // Whether the rows split over X too (the xy layout with G_x > 1): the slices of one Y rank's X ranks are
    // consecutive, and every reduction over the vocabulary runs over Y, then over X.
    bool over_x;
};

// The shape of every rank's vocabulary block on a grid: `rows` of `padded_vocab` and `width` columns of a model
// that wide, as VocabSlice has them; the decoder's memory layout sizes its buffers by it.
struct VocabBlockShape {
    int rows;
    int width;
    bool over_x;
};
VocabBlockShape vocab_block_shape(GridShape const& grid, VocabSplit split, int padded_vocab, int width);

// This rank's slice of a vocabulary of `vocab_size` words padded to `padded_vocab` rows, for a model `width` wide.
VocabSlice vocab_slice(ProcessGrid const& grid, VocabSplit split, int padded_vocab, int vocab_size, int width);

// Over the X·Y plane, a pass's [B·T, C] rows whole and in X column blocks on their way; unused otherwise.
struct VocabScratch {
    float* whole;
    float* blocks;
};

// out[B,T,C/G_x] = embedding of each token + position (wpe[maxT, C/G_x], null for none)
void vocab_parallel_embedding_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* out,
                                      VocabScratch scratch, std::int32_t const* tokens, WeightView wte_block,
                                      float const* wpe, int B, int T);
// Its mirror: dwte_block[slice.rows, slice.width] += dout[B,T,C/G_x]'s rows of the tokens held here, dwpe[maxT,
// C/G_x] += dout (null for none).
void vocab_parallel_embedding_backward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* dwte_block,
                                       float* dwpe, float const* dout, VocabScratch scratch,
                                       std::int32_t const* tokens, int B, int T);

// The LM head's input, final_norm[M, C/G_x], as its GEMMs read it: over the X·Y plane gathered over X into
// head_input[M, C] (through scratch[M·C]) and returned; else final_norm itself.
float const* vocab_parallel_head_input(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* head_input,
                                       float* scratch, float const* final_norm, std::int64_t M);
// logits[M, slice.rows] = head_input[M, slice.width] · head_block[slice.rows, slice.width]ᵀ, all-reduced over X as
// a normal Linear's output (linear.h) when the columns split over X.
void vocab_parallel_logits(Backend& backend, LinearGroups const& groups, bool overlap, VocabSlice const& slice,
                           float* logits, float const* head_input, WeightView head_block, std::int64_t M);
// d_final_norm[M, C/G_x] from dlogits[M, slice.rows] (as the head's GEMMs read it: Backend::cross_entropy_backward),
// with `weight_gradient(dlogits)` computing the head's weight gradient meanwhile (it reads head_input): in the y
// layout a normal Linear's input gradient (all-reduced over Y under the weight gradient); over the X·Y plane the
// weight gradient first, then d_head_input[M, C] = dlogits · head_block, its X column blocks laid out in
// scratch[M·C] (which may be head_input's rows, read by then), reduce-scattered over X and summed over Y.
void vocab_parallel_head_input_gradient(Backend& backend, LinearGroups const& groups, bool overlap,
                                        VocabSlice const& slice, float* d_final_norm, float* d_head_input,
                                        float* scratch, GemmInput dlogits, WeightView head_block, std::int64_t M,
                                        std::function<void(GemmInput dlogits)> const& weight_gradient);

// losses[N], logsumexp[N] of this process's tokens from logits[N, slice.rows]; row_max[N] and sums[N,2] scratch
void vocab_parallel_cross_entropy_forward(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* losses,
                                          float* logsumexp, float* row_max, double* sums, float const* logits,
                                          std::int32_t const* targets, std::int64_t N);
// The forward, then the gradient of the logits from dlosses[N] (each token's weight, known before its logits),
// returned as the LM head's GEMMs read it (Backend::cross_entropy_backward): where this process holds the whole
// vocabulary, both in one pass over logits[N, slice.rows] (the fused kernel), which then hold the gradient in fp32
// or are left as they were in bf16.
GemmInput vocab_parallel_cross_entropy(Backend& backend, ProcessGrid& grid, VocabSlice const& slice, float* losses,
                                       float* logsumexp, float* row_max, double* sums, float* logits,
                                       std::int32_t const* targets, float const* dlosses, std::int64_t N);

// One token's logits over the whole vocabulary, on every rank of the vocabulary's plane: the ranks' slices
// logits[slice.rows] gathered (padding ids included).
std::vector<float> gather_vocabulary_row(ProcessGrid& grid, VocabSlice const& slice, float const* logits);

// The token every rank of this rank's X·Y plane (one data × z replica) takes: the smallest of their choices. Each
// chooses from its own copy of the gathered logits, which the X all-reduce need not make equal to the bit on every
// rank; a draw that rounding tipped differently on two ranks would send them on different continuations, so the
// plane agrees on one. Collective over the grid's Y and X groups.
std::int32_t agreed_token(ProcessGrid& grid, std::int32_t token);

// out[i] = the most likely word of rows[i] (each [slice.rows], this rank's slice of a token's logits) over the
// whole vocabulary, ties to the smallest id; the same on every rank of the vocabulary's plane. Logits
// that are not finite are an error.
void vocab_parallel_argmax(ProcessGrid& grid, VocabSlice const& slice, std::span<float const* const> rows,
                           std::int32_t* out);

// The vocabulary blocks [slice.rows, slice.width] of the embedding (0) and of an untied LM head (1), each gathered
// over Z (in the GEMMs' precision) when Z is split, and their gradients in fp32, reduce-scattered over
// Z into the shards once the backward has finished with them. Without a Z split the shards are the blocks.
class VocabBlocks {
public:
    // blocks: 1 (a tied LM head) or 2; block_numel: slice.rows · slice.width;
    // scatter_comm: the reduce-scatters' wire type.
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
