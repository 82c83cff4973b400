// Rotary position embeddings (RoPE), as Llama applies them to each head's queries and keys: the pairs of channels
// (i, i + hs/2) of a head at position p are rotated by the angle p · inv_freq[i] (Hugging Face's rotate_half
// convention). Rotations keep norms, and the gradient of a rotation is the rotation back, so the backward is the
// same kernel with the opposite direction; nothing is saved for it. The frequencies: kernels/rope_frequencies.h.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// Rotates, in place, each of `heads` heads of hs channels at the start of every row of x: token t of sequence b is
// row b·T + t (rows `stride` apart) at position first_position + t. direction +1 embeds; −1 rotates back (the
// gradient of the embedding, applied to the gradient of its output).
//      x[B,T,stride] (heads·hs ≤ stride), inv_freq[hs/2]
template <typename T>
void rope_rotate(T* x, double const* inv_freq, int B, int T_, int heads, int head_size, std::int64_t stride,
                 int first_position, int direction);

}  // namespace axonn::cpu
