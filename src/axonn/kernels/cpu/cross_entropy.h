// Softmax cross-entropy over a padded vocabulary, fused so the [N,Vp] probabilities are never stored.
// N tokens, V real vocabulary entries, Vp ≥ V padded width (the columns V..Vp-1 are masked out).
// A target below zero is the ignore index: that token has no loss and no gradient. The per-token loss mask
// (Goldfish loss, padding) enters through dlosses, the weight each token's loss has in the mean.
#pragma once

#include <cstdint>

namespace axonn::cpu {

inline constexpr std::int32_t ignore_index = -1;

// losses[N] = logsumexp(logits[n, :V]) − logits[n, target[n]] (0 where ignored); logsumexp[N] saved for backward.
// logits[N,Vp], targets[N]
template <typename T>
void cross_entropy_forward(T* losses, T* logsumexp, T const* logits, std::int32_t const* targets, std::int64_t N,
                           int V, int Vp);

// dlogits[N,Vp] = (softmax(logits[n]) − onehot(target[n])) · dlosses[n], 0 in padded columns and ignored rows.
// Writes (does not accumulate), and dlogits may be the same buffer as logits: the logits are not needed after.
template <typename T>
void cross_entropy_backward(T* dlogits, T const* logits, T const* logsumexp, std::int32_t const* targets,
                            T const* dlosses, std::int64_t N, int V, int Vp);

}  // namespace axonn::cpu
