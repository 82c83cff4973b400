// Softmax cross-entropy over a padded vocabulary, fused so the [N,Vp] probabilities are never stored, and
// split into phases so that the vocabulary can be split over processes (G_y > 1, vocabulary-parallel): each
// process holds Vp_local columns starting at global id vocab_begin, of which the first `valid` are real words
// (the rest are padding, masked out). The row maxima are all-reduced (max) and the sums (sum) between phases;
// alone, they are used as they are.
// A target below zero is the ignore index: that token has no loss and no gradient. The per-token loss mask
// (Goldfish loss, padding) enters through dlosses, the weight each token's loss has in the mean.
#pragma once

#include <cstdint>

namespace axonn {
struct bfloat16;  // core/bfloat16.h, not included: the CUDA kernels (C++17) include this header for ignore_index
}

namespace axonn::cpu {

inline constexpr std::int32_t ignore_index = -1;

// row_max[N] = max of each row's valid columns      logits[N,Vp_local]
template <typename T> void cross_entropy_max(T* row_max, T const* logits, std::int64_t N, int valid, int Vp_local);

// sums[N,2] = {Σ_valid exp(logit − row_max), the target's logit if this slice holds the target, else 0}
template <typename T>
void cross_entropy_sums(double* sums, T const* logits, T const* row_max, std::int32_t const* targets, std::int64_t N,
                        int valid, int Vp_local, int vocab_begin);

// Both, bitwise, where no other rank holds part of the vocabulary (the maxima need no all-reduce): each row's
// maximum, then its sums while the row is still in cache. A row of GPT-2's vocabulary is 196 KiB, so the sums read
// it from L2 instead of memory.
template <typename T>
void cross_entropy_max_and_sums(T* row_max, double* sums, T const* logits, std::int32_t const* targets, std::int64_t N,
                                int valid, int Vp_local, int vocab_begin);

// losses[N] = log(Σ exp) + row_max − target logit (0 where ignored); logsumexp[N] saved for the backward
template <typename T>
void cross_entropy_losses(T* losses, T* logsumexp, T const* row_max, double const* sums, std::int32_t const* targets,
                          std::int64_t N);

// dlogits[N,Vp_local] = (softmax − onehot(target)) · dlosses[n], 0 in padded columns and ignored rows.
// Writes (does not accumulate), and dlogits may be the same buffer as logits: the logits are not needed after.
template <typename T>
void cross_entropy_backward(T* dlogits, T const* logits, T const* logsumexp, std::int32_t const* targets,
                            T const* dlosses, std::int64_t N, int valid, int Vp_local, int vocab_begin);
// The same written as its bf16 rounding (for bf16 GEMMs, which read nothing else), bitwise what writing fp32 and
// rounding with to_bf16 gives, without the fp32 [N,Vp_local] ever reaching memory: each row is computed in blocks
// of columns that stay in cache, then rounded.
void cross_entropy_backward(bfloat16* dlogits, float const* logits, float const* logsumexp,
                            std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                            int Vp_local, int vocab_begin);

}  // namespace axonn::cpu
