#include "axonn/kernels/rope_frequencies.h"

#include <cmath>
#include <numbers>

namespace axonn {
namespace {

double llama3_rescaled(double inv_freq, RopeScaling const& s) {
    double const wavelength = 2 * std::numbers::pi / inv_freq;
    double const low_freq_wavelength = s.original_max_position / s.low_freq_factor;
    double const high_freq_wavelength = s.original_max_position / s.high_freq_factor;
    if (wavelength < high_freq_wavelength) return inv_freq;
    if (wavelength > low_freq_wavelength) return inv_freq / s.factor;
    double const smooth =
        (s.original_max_position / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    return (1 - smooth) * inv_freq / s.factor + smooth * inv_freq;
}

}  // namespace

std::vector<double> rope_inverse_frequencies(int head_size, double theta, std::optional<RopeScaling> const& scaling) {
    std::vector<double> inv_freq(static_cast<std::size_t>(head_size / 2));
    for (int i = 0; i < head_size / 2; ++i) {
        inv_freq[i] = 1.0 / std::pow(theta, 2.0 * i / head_size);
        if (scaling) inv_freq[i] = llama3_rescaled(inv_freq[i], *scaling);
    }
    return inv_freq;
}

}  // namespace axonn
