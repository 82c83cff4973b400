// cpu::sum_of_squares, the gradient norm's sum on a rank: the same input gives the same bits on every call with
// 1 to 5 threads (more threads than this machine's cores included, where an OpenMP reduction's order of adding
// the threads' sums varied between calls), and the sum is within 1e-12 relative of a sequential one in long double.
// The input's magnitudes span 2^-20 to 2^20 so that the order of additions shows in the last bits.
#include "axonn/core/rng.h"
#include "axonn/kernels/cpu/adamw.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

namespace axonn::cpu {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_sum_of_squares {

TEST(SumOfSquares, IsTheSameOnEveryCallWithAnyNumberOfThreads) {
    std::vector<float> x(100'003);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = std::ldexp(standard_normal({21, 0}, i), static_cast<int>(i % 41) - 20);
    }
    long double exact = 0;
    for (float const value : x) exact += static_cast<long double>(value) * value;
    int const threads = omp_get_max_threads();
    for (int const team : {1, 2, 3, 4, 5}) {
        omp_set_num_threads(team);
        double const first = sum_of_squares(x.data(), static_cast<std::int64_t>(x.size()));
        EXPECT_NEAR(first, static_cast<double>(exact), 1e-12 * static_cast<double>(exact)) << team << " threads";
        for (int call = 0; call < 200; ++call) {
            ASSERT_EQ(sum_of_squares(x.data(), static_cast<std::int64_t>(x.size())), first)
                << team << " threads, call " << call;
        }
    }
    omp_set_num_threads(threads);
}

}  // namespace test_sum_of_squares
}  // namespace axonn::cpu
