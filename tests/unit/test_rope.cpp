// Llama 3's rotary frequencies (kernels/rope_frequencies.h): without scaling, theta^(−2i/hs); with Llama 3.1's scaling
// (factor 8, low 1, high 4, original context 8192, theta 500000, head size 128), every frequency whose wavelength
// is under 8192/4 is kept, every one over 8192/1 divided by 8, and those between interpolated strictly between the
// two, all still decreasing with i; the head size of 128 puts frequencies in all three bands. (The rotation itself
// is checked against finite differences in test_kernel_gradients.cpp, and its pairing of channels against
// Hugging Face's with the PyTorch twin.)
#include "axonn/kernels/rope_frequencies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace axonn {
namespace {

TEST(Rope, FrequenciesWithoutScaling) {
    std::vector<double> const inv_freq = rope_inverse_frequencies(8, 10000.0, std::nullopt);
    ASSERT_EQ(inv_freq.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(inv_freq[i], std::pow(10000.0, -2.0 * i / 8));
}

TEST(Rope, Llama3ScalingKeepsSlowsAndInterpolates) {
    RopeScaling const scaling{8.0, 1.0, 4.0, 8192};
    std::vector<double> const raw = rope_inverse_frequencies(128, 500000.0, std::nullopt);
    std::vector<double> const scaled = rope_inverse_frequencies(128, 500000.0, scaling);
    ASSERT_EQ(scaled.size(), 64u);
    int kept = 0, slowed = 0, between = 0;
    for (std::size_t i = 0; i < scaled.size(); ++i) {
        double const wavelength = 2 * std::numbers::pi / raw[i];
        if (wavelength < 8192 / 4.0) {
            EXPECT_DOUBLE_EQ(scaled[i], raw[i]) << i;
            ++kept;
        } else if (wavelength > 8192 / 1.0) {
            EXPECT_DOUBLE_EQ(scaled[i], raw[i] / 8) << i;
            ++slowed;
        } else {
            EXPECT_GT(scaled[i], raw[i] / 8) << i;
            EXPECT_LT(scaled[i], raw[i]) << i;
            ++between;
        }
        if (i > 0) {
            EXPECT_LT(scaled[i], scaled[i - 1]) << i;
        }
    }
    EXPECT_GT(kept, 0);
    EXPECT_GT(slowed, 0);
    EXPECT_GT(between, 0);
}

}  // namespace
}  // namespace axonn
