// RMSNorm with the channels split over X (parallel/rmsnorm.h) equals RMSNorm of the whole row: under mpirun at
// np 1, 2, 4 and 8, X = the world, each rank holds 24/G_x channels of 7 rows, and its slice of the output, of
// the input gradient and of the weight gradient must match the serial kernel's within 1e-6 relative (fp32; the
// statistics are summed in double in another order).
#include "axonn/comm/grid.h"
#include "axonn/core/rng.h"
#include "axonn/kernels/backend.h"
#include "axonn/parallel/rmsnorm.h"
#include "support/micro_model.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>

#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_rmsnorm_grids {

TEST(RmsNormOverX, SlicesMatchTheWholeRow) {
    int const G = testing::world_size(), N = 7, C = 24, Cl = C / G;
    ProcessGrid grid(MPI_COMM_WORLD, GridShape{.x = G}, parse_axis_order("x,y,z,data"));
    int const x = grid.coord(Axis::x);
    auto const backend = make_backend("cpu", DType::f32);
    std::vector<float> inp(N * C), weight(C), dout(N * C);
    for (std::size_t i = 0; i < inp.size(); ++i) inp[i] = static_cast<float>(2 * standard_normal({3, 1}, i));
    for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(1 + standard_normal({3, 2}, i));
    for (std::size_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>(standard_normal({3, 3}, i));

    // The whole row on this rank alone.
    std::vector<double> stats(N);
    std::vector<float> out(N * C), rstd(N), dinp(N * C, 0.0f), dweight(C, 0.0f);
    backend->rmsnorm_statistics(stats.data(), inp.data(), N, C);
    backend->rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), stats.data(), N, C, C, 1e-5);
    backend->rmsnorm_backward_statistics(stats.data(), dout.data(), inp.data(), weight.data(), rstd.data(), N, C);
    backend->rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(), rstd.data(),
                              stats.data(), N, C, C);

    // This rank's channels [x·Cl, (x+1)·Cl) of every row, normalised over X.
    auto slice = [&](std::vector<float> const& whole, int rows) {
        std::vector<float> part(static_cast<std::size_t>(rows) * Cl);
        for (int n = 0; n < rows; ++n) {
            for (int c = 0; c < Cl; ++c) part[n * Cl + c] = whole[n * C + x * Cl + c];
        }
        return part;
    };
    std::vector<float> const inp_l = slice(inp, N), weight_l = slice(weight, 1), dout_l = slice(dout, N);
    std::vector<float> out_l(N * Cl), rstd_l(N), dinp_l(N * Cl, 0.0f), dweight_l(Cl, 0.0f);
    Communicator& xs = grid.comm(Group::x);
    parallel_rmsnorm_forward(*backend, xs, stats.data(), out_l.data(), rstd_l.data(), inp_l.data(), weight_l.data(), N,
                             Cl, C, 1e-5);
    parallel_rmsnorm_backward(*backend, xs, stats.data(), dinp_l.data(), dweight_l.data(), dout_l.data(), inp_l.data(),
                              weight_l.data(), rstd_l.data(), N, Cl, C);
    EXPECT_LT(testing::relative_difference(out_l, slice(out, N)), 1e-6);
    EXPECT_LT(testing::relative_difference(rstd_l, rstd), 1e-6);
    EXPECT_LT(testing::relative_difference(dinp_l, slice(dinp, N)), 1e-6);
    EXPECT_LT(testing::relative_difference(dweight_l, slice(dweight, 1)), 1e-6);
}

}  // namespace test_rmsnorm_grids
}  // namespace axonn
