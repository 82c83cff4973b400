// The tied embedding and the LM head's loss with the vocabulary split over Y (rows of wte's [Vp/G_y, C/G_x]
// block). The rank that holds a token's row looks it up, the others contribute zero, and an all-reduce over Y
// completes the embedding. The cross-entropy all-reduces each token's maximum logit (max) and its
// (Σ exp, target logit) (sum) over Y, so no rank ever holds a whole row of logits.
#pragma once

#include "axonn/comm/communicator.h"
#include "axonn/kernels/backend.h"

#include <cstdint>

namespace axonn {

struct VocabSlice {
    int begin;  // global id of this rank's first row
    int rows;   // Vp / G_y
    int valid;  // rows that are real words (the rest pad the vocabulary)
};

// out[B,T,C_local] = embedding of each token + position (wpe is passed by one Y rank only, else null)
void vocab_parallel_embedding_forward(Backend& backend, Communicator& y, VocabSlice const& slice, float* out,
                                      std::int32_t const* tokens, WeightView wte_block, float const* wpe, int B,
                                      int T, int C_local);

// losses[N], logsumexp[N] of this process's tokens from logits[N, slice.rows]; row_max[N] and sums[N,2] scratch
void vocab_parallel_cross_entropy_forward(Backend& backend, Communicator& y, VocabSlice const& slice, float* losses,
                                          float* logsumexp, float* row_max, double* sums, float const* logits,
                                          std::int32_t const* targets, std::int64_t N);

}  // namespace axonn
