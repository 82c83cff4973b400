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

// The whole cross-entropy at once where this process holds the whole vocabulary (ids 0 ...) and each token's
// weight (dlosses) is known before its logits (the LM head's backward run chunk by chunk in the forward): bitwise
// cross_entropy_max_and_sums, cross_entropy_losses and cross_entropy_backward (fp32, or its bf16 rounding), each row
// read from memory once (the sums and the gradient read it from L2). dlogits may be logits when Out is float.
// losses[N], logsumexp[N], dlogits[N,Vp_local], logits[N,Vp_local], targets[N], dlosses[N]
template <typename Out>
void cross_entropy_forward_backward(float* losses, float* logsumexp, Out* dlogits, float const* logits,
                                    std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                                    int Vp_local);

}  // namespace axonn::cpu
