// The claim of the 4D algorithm: every grid gives the serial answer. Under mpirun at np 1, 2, 4 and 8, for every
// ordered factorisation of the world size into (data, z, y, x) (all 20 at np 8), gpt2-micro (8 heads, width 64,
// vocabulary 300 padded to 320, B = 8, T = 16) runs serially and on the grid from the same seed and batches
// (train/parity.h); at np 3 and 6, with 6 heads of width 48 and B = 6, on data=3 and z=3, data=3 with y=2 and z=3
// with x=2 (support/micro_model.h); and:
//   - the gathered initial weights are bit-identical to the serial ones;
//   - after one step, the logits (each rank's slice), the loss and every gathered gradient tensor are within
//     1e-5 relative (norm-wise, per tensor) of the serial run; the gradient norm too;
//   - over 20 AdamW steps (warm-up + cosine schedule, clipping), every loss is within 1e-4 relative;
//   - with the Goldfish loss, the masks are equal and the losses follow serial's (GoldfishMasksAndLossesMatchSerial);
//   - in mixed precision (bf16 GEMMs, weights gathered and the Linears' all-reduces in bf16), one step against
//     the serial bf16 run: see Bf16OneStepMatchesSerialBf16 for its tolerance.
// All with the default vocabulary layout (--vocab-split auto: the one that moves fewer bytes over X, the X·Y
// plane's or AxoNN's split over Y); with each layout named, one step in fp32 and one in bf16 with the same
// tolerances, where X is split.
// A single Linear layer is checked on the same grids, transposed and not, with and without bias.
// Assertions are EXPECT_: a rank that left a test early would leave the others waiting in a collective.
#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/parallel/linear.h"
#include "axonn/parallel/weight_gather.h"
#include "axonn/train/parity.h"
#include "support/micro_model.h"
#include "support/relative_difference.h"
#include "support/suite_parity.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_model_grids {

using testing::micro_model;
using testing::relative_difference;
using testing::world_size;

std::vector<GridShape> model_grids() {
    std::vector<GridShape> grids = testing::suite_grids(micro_model(), testing::suite_batch());
    if (!testing::world_of_threes()) {
        EXPECT_EQ(grids.size(), grid_factorisations(world_size()).size()) << "gpt2-micro must split on every grid";
    }
    return grids;
}

ParityOptions micro_parity(GridShape const& grid, int steps) {
    return testing::suite_parity(micro_model(), grid, steps);
}

std::string grid_name(::testing::TestParamInfo<GridShape> const& info) { return testing::grid_test_name(info.param); }

class ModelOnGrid : public ::testing::TestWithParam<GridShape> {};

TEST_P(ModelOnGrid, OneStepMatchesSerial) {
    testing::expect_step_near_serial(micro_parity(GetParam(), 1), 16, testing::fp32_step_tolerance);
}

// Every check above runs with the default vocabulary layout (the one that moves fewer bytes over X on the grid);
// each layout named is checked with one step in fp32 and one in bf16, on the grids with x > 1 (elsewhere the two
// layouts are one).
class VocabularyLayoutOnGrid : public ::testing::TestWithParam<GridShape> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(VocabularyLayoutOnGrid);  // no grid of 1 or 3 ranks splits X

TEST_P(VocabularyLayoutOnGrid, EachOneStepMatchesSerial) {
    testing::expect_both_vocab_splits_near_serial(micro_model(), GetParam(), 16);
}

TEST_P(ModelOnGrid, TwentyAdamWStepsFollowSerialLosses) {
    ParityOptions options = micro_parity(GetParam(), 20);
    ParityReport const report = run_parity(options);
    ASSERT_EQ(report.loss_rel_diff.size(), 20u);
    for (std::size_t step = 0; step < 20; ++step) EXPECT_LT(report.loss_rel_diff[step], 1e-4) << "step " << step;
}

// The Goldfish loss (hash, k=4, h=4: a quarter of the targets from the fourth on leave the loss): over 4 AdamW
// steps the loss (the kept targets' mean) and the all-, kept- and dropped-target losses stay within 1e-4 relative
// of serial, as the unmasked losses do; and each rank's mask computed from its own rows alone equals those rows of
// the serial mask (the mask depends on a row's targets only, which the trainer does not rely on: it computes the
// mask of the whole global batch on every rank).
TEST_P(ModelOnGrid, GoldfishMasksAndLossesMatchSerial) {
    ParityOptions options = micro_parity(GetParam(), 4);
    options.goldfish = parse_goldfish("k=4,h=4");
    ParityReport const report = run_parity(options);
    EXPECT_TRUE(report.masks_equal);
    ASSERT_EQ(report.masked_loss_rel_diff.size(), 4u);
    for (std::size_t step = 0; step < 4; ++step) {
        EXPECT_LT(report.loss_rel_diff[step], 1e-4) << "step " << step;
        EXPECT_LT(report.masked_loss_rel_diff[step], 1e-4) << "step " << step;
    }
}

// The grid differs from the serial bf16 run where it rounds more: each all-reduced partial sum of a Linear's
// output or input gradient is rounded to bf16 (2⁻⁹ relative), and an activation whose fp32 value differs in the
// last bits may round to the other neighbouring bf16 value. Tolerance 2e-2 norm-wise for logits, loss and every
// gradient (measured up to 8e-3 at np 8); the initial weights are still bit-identical (bf16 copies of the same
// fp32 weights).
TEST_P(ModelOnGrid, Bf16OneStepMatchesSerialBf16) {
    testing::expect_bf16_step_near_serial(micro_model(), GetParam(), 16);
}

// The LM head in chunks of rows (--logit-rows) on the grid, against the serial model with all rows at once: one
// step as OneStepMatchesSerial, with the same tolerances (1e-5; the chunks only reorder the head's weight-gradient
// sum). The token losses stand for the logits, which a chunked head does not keep. Each rank's B·16 / (data · z)
// rows run in chunks of 24 (6, 3 or 2 of them; one where data · z = 8), and once more in chunks of 5 in passes of
// one sequence with recomputation (the head's gradient written by the first chunk of the first pass, then added).
TEST_P(ModelOnGrid, LogitsInChunksMatchSerial) {
    for (int const logit_rows : {24, 5}) {
        ParityOptions options = micro_parity(GetParam(), 1);
        options.run.model.logit_rows = logit_rows;
        if (logit_rows == 5) {
            options.run.micro_batch = 1;
            options.run.model.recompute = Recompute::layer;
        }
        ParityReport const report = run_parity(options);
        int const pass_rows = logit_rows == 5 ? 16 : testing::suite_batch() * 16 / GetParam().batch_replicas();
        EXPECT_EQ(report.logits_in_chunks, pass_rows > logit_rows) << logit_rows << " rows";
        EXPECT_LT(report.logits_rel_diff, 1e-5) << logit_rows << " rows";
        EXPECT_LT(report.loss_rel_diff.at(0), 1e-5) << logit_rows << " rows";
        EXPECT_LT(report.grad_norm_rel_diff.at(0), 1e-5) << logit_rows << " rows";
        EXPECT_EQ(report.grad_rel_diff.size(), 16u);
        for (auto const& [name, difference] : report.grad_rel_diff) {
            EXPECT_LT(difference, 1e-5) << "gradient of " << name << ", " << logit_rows << " rows";
        }
    }
}

// One step of the micro model on `grid` against serial, its gradients reduce-scattered over Z and summed in the
// types given. The forward is untouched: logits and loss within fp32's 1e-5 of serial, checked here.
ParityReport one_step_with_grad_comm(GridShape const& grid, DType scatter, DType sum) {
    ParityOptions options = micro_parity(grid, 1);
    options.run.model.grad_scatter_comm = scatter;
    options.run.model.grad_sum_comm = sum;
    ParityReport report = run_parity(options);
    EXPECT_LT(report.logits_rel_diff, 1e-5);
    EXPECT_LT(report.loss_rel_diff.at(0), 1e-5);
    return report;
}

// --grad-comm bf16: the gradients' Z reduce-scatters and data all-reduces move bf16. The forward is untouched
// (logits and loss within 1e-5, as in fp32); each gradient sum is rounded to bf16 at every partial sum of the
// reduction (2⁻⁹ relative each, at most 7 of them at np 8): tolerance 1e-2 norm-wise per gradient (measured up
// to 3.6e-3 on data=2,z=4). On a grid
// that sums gradients at all (data × z > 1), the Z-sharded weights' gradients must show that rounding (> 1e-5).
TEST_P(ModelOnGrid, Bf16GradientCommunicationStaysNearSerial) {
    GridShape const grid = GetParam();
    ParityReport const report = one_step_with_grad_comm(grid, DType::bf16, DType::bf16);
    EXPECT_LT(report.grad_norm_rel_diff.at(0), 1e-2);
    EXPECT_EQ(report.grad_rel_diff.size(), 16u);
    for (auto const& [name, difference] : report.grad_rel_diff) EXPECT_LT(difference, 1e-2) << "gradient of " << name;
    if (grid.batch_replicas() > 1) {
        EXPECT_GT(report.grad_rel_diff.at("qkvw"), 1e-5) << "no bf16 rounding on this grid";
    }
}

// --grad-comm bf16-scatter: the Z reduce-scatters move bf16, the data all-reduces fp32. Where Z is split, the
// gradients of the Z-sharded weights (the vocabulary block and the four Linears) show the bf16 rounding (> 1e-5,
// within the 1e-2 above); every other gradient, summed over Z and data in fp32, stays within fp32's 1e-5 of
// serial, as do all of them where Z is whole.
TEST_P(ModelOnGrid, Bf16ReduceScattersKeepTheDataSumsInFp32) {
    GridShape const grid = GetParam();
    ParityReport const report = one_step_with_grad_comm(grid, DType::bf16, DType::f32);
    EXPECT_LT(report.grad_norm_rel_diff.at(0), grid.z > 1 ? 1e-2 : 1e-5);
    EXPECT_EQ(report.grad_rel_diff.size(), 16u);
    std::set<std::string> const reduce_scattered = {"wte", "qkvw", "attprojw", "fcw", "fcprojw"};
    for (auto const& [name, difference] : report.grad_rel_diff) {
        bool const rounded = grid.z > 1 && reduce_scattered.contains(name);
        EXPECT_LT(difference, rounded ? 1e-2 : 1e-5) << "gradient of " << name;
    }
    if (grid.z > 1) {
        EXPECT_GT(report.grad_rel_diff.at("qkvw"), 1e-5) << "no bf16 rounding on this grid";
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, ModelOnGrid, ::testing::ValuesIn(model_grids()), grid_name);
INSTANTIATE_TEST_SUITE_P(GridsSplittingX, VocabularyLayoutOnGrid,
                         ::testing::ValuesIn(testing::grids_splitting_x(model_grids())), grid_name);

// One Linear layer [N, K] alone: the grid's forward, dX, dW and db against the serial kernel on the whole batch.
struct LinearCase {
    bool transposed;
    bool bias;
    std::int64_t M;  // rows of the whole batch: 1024 cut into chunks of rows (parallel/linear.h) on most grids
};

class LinearOnGrid : public ::testing::TestWithParam<std::tuple<GridShape, LinearCase>> {};

std::vector<float> deterministic(std::size_t n, std::uint64_t stream) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(standard_normal({11, stream}, i));
    return values;
}

TEST_P(LinearOnGrid, ForwardAndBackwardMatchSerial) {
    auto const [shape, layer] = GetParam();
    ProcessGrid grid(MPI_COMM_WORLD, shape);
    CpuBackend backend;
    // Over data × z; in a world of threes rounded up to a multiple of 3 (18 and 1026 rows).
    std::int64_t const M = testing::world_of_threes() ? (layer.M + 2) / 3 * 3 : layer.M;
    constexpr std::int64_t K = 24, N = 40;  // over X and Y (or Y and X)
    std::vector<float> const x = deterministic(M * K, 1), w = deterministic(N * K, 2), b = deterministic(N, 3);
    std::vector<float> const dy = deterministic(M * N, 4);
    std::vector<float> y(M * N), dx(M * K), dw(N * K), db(N);  // serial
    cpu::linear_forward<float>(y.data(), x.data(), w.data(), layer.bias ? b.data() : nullptr, M, K, N);
    cpu::linear_backward_input<float>(dx.data(), dy.data(), w.data(), M, K, N);
    cpu::linear_backward_weight<float>(dw.data(), layer.bias ? db.data() : nullptr, dy.data(), x.data(), M, K, N,
                                       GradWrite::overwrite);

    Axis const f_axis = layer.transposed ? Axis::y : Axis::x, o_axis = layer.transposed ? Axis::x : Axis::y;
    Group const f_group = layer.transposed ? Group::y : Group::x, o_group = layer.transposed ? Group::x : Group::y;
    int const gf = grid.size(f_axis), go = grid.size(o_axis), gz = grid.size(Axis::z);
    int const f = grid.coord(f_axis), o = grid.coord(o_axis), z = grid.coord(Axis::z);
    std::int64_t const Ml = M / (shape.data * gz), Kl = K / gf, Nl = N / go;
    std::int64_t const row0 = (grid.coord(Axis::data) * gz + z) * Ml;
    std::int64_t const chunk = Nl * Kl / gz;
    // This rank's shard: the [Nl, Kl] block at (o, f), flattened, chunk z; its rows of x and dy.
    auto block_element = [&](std::vector<float> const& full, std::int64_t e) {
        std::int64_t const r = e / Kl, c = e % Kl;
        return full[(o * Nl + r) * K + f * Kl + c];
    };
    std::vector<float> w_shard(chunk), x_local(Ml * Kl), dy_local(Ml * Nl), b_local(Nl);
    for (std::int64_t e = 0; e < chunk; ++e) w_shard[e] = block_element(w, z * chunk + e);
    for (std::int64_t r = 0; r < Ml; ++r) {
        for (std::int64_t c = 0; c < Kl; ++c) x_local[r * Kl + c] = x[(row0 + r) * K + f * Kl + c];
        for (std::int64_t c = 0; c < Nl; ++c) dy_local[r * Nl + c] = dy[(row0 + r) * N + o * Nl + c];
    }
    for (std::int64_t c = 0; c < Nl; ++c) b_local[c] = b[o * Nl + c];

    LinearGroups const groups{grid.comm(f_group), grid.comm(o_group)};
    // Overlapped (the weight gathered ahead for both uses, dX's all-reduce under the dW GEMM, the reduce-scatter
    // waited on at the end) and not: the results must be bitwise the same.
    std::vector<float> y_local(Ml * Nl), dx_local(Ml * Kl), dw_shard(chunk), db_local(Nl);
    for (bool overlap : {true, false}) {
        WeightGather weights(grid.comm(Group::z_prefetch), DType::f32, Nl * Kl, overlap, 0, Memory::host);
        GradScatter weight_grads(backend, grid.comm(Group::z), Nl * Kl, 1, overlap);
        weights.begin_pass({{w_shard.data(), Nl * Kl}, {w_shard.data(), Nl * Kl}});
        std::vector<float> y_run(Ml * Nl), dx_run(Ml * Kl), dw_run(chunk), db_run(Nl);
        parallel_linear_forward(backend, groups, overlap, y_run.data(), x_local.data(), weights.next(),
                                layer.bias ? b_local.data() : nullptr, Ml, Kl, Nl);
        parallel_linear_backward(backend, groups, weight_grads, overlap, dx_run.data(), dw_run.data(),
                                 layer.bias ? db_run.data() : nullptr, backend.gemm_input(dy_local.data(), Ml * Nl),
                                 x_local.data(), weights.next(),
                                 Ml, Kl, Nl, GradWrite::overwrite);
        weight_grads.complete_all();
        if (overlap) {
            y_local = y_run, dx_local = dx_run, dw_shard = dw_run, db_local = db_run;
        } else {
            EXPECT_EQ(y_run, y_local);
            EXPECT_EQ(dx_run, dx_local);
            EXPECT_EQ(dw_run, dw_shard);
            EXPECT_EQ(db_run, db_local);
        }
    }
    // db sums over this rank's rows only; the model's gradient sync completes it over Z and data.
    grid.comm(Group::z).all_reduce(db_local.data(), db_local.size());
    grid.comm(Group::data).all_reduce(db_local.data(), db_local.size());
    grid.comm(Group::data).all_reduce(dw_shard.data(), dw_shard.size());

    std::vector<float> y_expected(Ml * Nl), dx_expected(Ml * Kl), dw_expected(chunk), db_expected(Nl);
    for (std::int64_t r = 0; r < Ml; ++r) {
        for (std::int64_t c = 0; c < Nl; ++c) y_expected[r * Nl + c] = y[(row0 + r) * N + o * Nl + c];
        for (std::int64_t c = 0; c < Kl; ++c) dx_expected[r * Kl + c] = dx[(row0 + r) * K + f * Kl + c];
    }
    for (std::int64_t e = 0; e < chunk; ++e) dw_expected[e] = block_element(dw, z * chunk + e);
    for (std::int64_t c = 0; c < Nl; ++c) db_expected[c] = db[o * Nl + c];
    // fp32 with a different summation order: 1e-6 relative, norm-wise.
    EXPECT_LT(relative_difference(y_local, y_expected), 1e-6);
    EXPECT_LT(relative_difference(dx_local, dx_expected), 1e-6);
    EXPECT_LT(relative_difference(dw_shard, dw_expected), 1e-6);
    if (layer.bias) {
        EXPECT_LT(relative_difference(db_local, db_expected), 1e-6);
    }
}

std::vector<GridShape> linear_grids() {
    std::vector<GridShape> grids;
    std::vector<GridShape> const candidates = testing::world_of_threes()
                                                  ? testing::suite_grids(micro_model(), testing::suite_batch())
                                                  : grid_factorisations(world_size());
    for (auto const& g : candidates) {
        if (24 % g.x == 0 && 24 % g.y == 0 && 40 % g.x == 0 && 40 % g.y == 0) {
            grids.push_back(g);
        }
    }
    return grids;
}

std::string linear_case_name(::testing::TestParamInfo<std::tuple<GridShape, LinearCase>> const& info) {
    LinearCase const layer = std::get<1>(info.param);
    return testing::grid_test_name(std::get<0>(info.param)) + (layer.transposed ? "_transposed" : "_normal") +
           (layer.bias ? "_bias" : "") + "_M" + std::to_string(layer.M);
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, LinearOnGrid,
                         ::testing::Combine(::testing::ValuesIn(linear_grids()),
                                          ::testing::Values(LinearCase{false, true, 16}, LinearCase{false, false, 16},
                                                          LinearCase{true, true, 16}, LinearCase{true, false, 16},
                                                          LinearCase{false, true, 1024}, LinearCase{true, false, 1024})),
                         linear_case_name);

TEST(BadGrids, RejectedWithTheValidGridsListed) {
    GptConfig const config = micro_model();
    int const world = world_size();
    try {
        require_valid_grid(gpt_parameters(config), GridShape{.data = world + 1}, world, testing::suite_batch());
        ADD_FAILURE() << "a grid of the wrong size was accepted";
    } catch (Error const& e) {
        std::string const message = e.what();
        EXPECT_NE(message.find("valid grids for " + std::to_string(world) + " ranks"), std::string::npos) << message;
        EXPECT_NE(message.find(GridShape{.data = world}.to_string()), std::string::npos) << message;
    }
    GptConfig four_heads = config;
    four_heads.n_head = 4;  // y = 8 no longer divides the heads
    if (world == 8) {
        EXPECT_THROW(require_valid_grid(gpt_parameters(four_heads), GridShape{.y = 8}, 8, 8), Error);
    }
    EXPECT_THROW(GridShape::parse("data=2,w=4"), Error);
}

}  // namespace test_model_grids
}  // namespace axonn
