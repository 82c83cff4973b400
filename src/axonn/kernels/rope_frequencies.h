// The frequencies of rotary position embeddings (RoPE), for any backend: the pairs of channels (i, i + hs/2) of a
// head at position p are rotated by p · inv_freq[i] (kernels/cpu/rope.h applies them).
#pragma once

#include <optional>
#include <vector>

namespace axonn {

// Llama 3's rescaling of the frequencies for long contexts (Hugging Face's rope_type "llama3"): wavelengths longer
// than original_max_position / low_freq_factor are slowed by `factor`, those shorter than
// original_max_position / high_freq_factor kept, and the band between interpolated smoothly.
struct RopeScaling {
    double factor = 8.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    double original_max_position = 8192;
    bool operator==(RopeScaling const&) const = default;
};

// inv_freq[hs/2] = theta^(−2i/hs), rescaled when `scaling` is given.
std::vector<double> rope_inverse_frequencies(int head_size, double theta, std::optional<RopeScaling> const& scaling);

}  // namespace axonn
