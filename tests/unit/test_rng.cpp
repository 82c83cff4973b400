// The counter-based RNG: a value depends only on (seed, stream, index), so any slice of a tensor can be
// generated on its own and matches the same slice of the whole tensor bit for bit.
#include "axonn/core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace axonn {
namespace {

TEST(Rng, SliceGeneratedAloneEqualsSliceOfWhole) {
    std::vector<float> whole(1000);
    fill_normal(whole, {42, 3}, 0, 0.0f, 0.02f);
    std::vector<float> slice(100);
    fill_normal(slice, {42, 3}, 450, 0.0f, 0.02f);
    for (std::size_t i = 0; i < slice.size(); ++i) EXPECT_EQ(slice[i], whole[450 + i]) << i;
}

TEST(Rng, SeedStreamAndIndexEachChangeTheValue) {
    double const base = standard_normal({1, 1}, 5);
    EXPECT_NE(base, standard_normal({2, 1}, 5));
    EXPECT_NE(base, standard_normal({1, 2}, 5));
    EXPECT_NE(base, standard_normal({1, 1}, 6));
    EXPECT_EQ(base, standard_normal({1, 1}, 5));
}

TEST(Rng, NormalHasUnitMomentsAndUniformStaysOpen) {
    constexpr int n = 200000;
    double sum = 0, squares = 0, minimum = 1, maximum = 0;
    for (int i = 0; i < n; ++i) {
        double const x = standard_normal({9, 9}, i);
        sum += x;
        squares += x * x;
        double const u = uniform_open01({9, 8}, i);
        minimum = std::min(minimum, u);
        maximum = std::max(maximum, u);
    }
    // Standard errors: mean 1/sqrt(n) ≈ 0.0022, variance sqrt(2/n) ≈ 0.0032; 5 standard errors allowed.
    EXPECT_NEAR(sum / n, 0.0, 0.011);
    EXPECT_NEAR(squares / n, 1.0, 0.016);
    EXPECT_GT(minimum, 0.0);
    EXPECT_LT(maximum, 1.0);
}

}  // namespace
}  // namespace axonn
