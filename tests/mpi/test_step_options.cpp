// How a step runs must not change what it computes. Under mpirun at np 1, 2, 4 and 8 (and 3 and 6: the grids and
// shapes of support/micro_model.h), on every grid of gpt2-micro and of the micro Llama (B = 8, T = 16, a few
// targets ignored), in fp32 and in mixed precision (bf16: native GEMMs or emulated ones alike), from the same seed
// and batches:
//   - overlap on and off give bitwise the same losses, gradient norms, gradients and weights after 3 AdamW steps
//     (the same collectives, waited on at other times);
//   - recomputing each layer in the backward gives bitwise the same as keeping its activations, and so does
//     caching the gathered weights;
//   - micro-batches of one sequence give the loss and gradients of the whole batch in one pass within 1e-6
//     relative (norm-wise) in fp32, the same sums in another order; 2e-3 in bf16, where a sum in another order
//     may round to the other neighbouring bf16 value (2⁻⁸ relative) on its way to the next GEMM (measured up to
//     3.3e-4 in the gradients, the micro Llama on x = 4).
// Assertions are EXPECT_: a rank that left a test early would leave the others waiting in a collective.
#include "axonn/core/rng.h"
#include "axonn/model/decoder.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_step_options {

using testing::micro_llama;
using testing::micro_model;
using testing::relative_difference;
using testing::world_size;

// The suites' batch (support/micro_model.h); a function, since the world size is known only once MPI runs.
int batch() { return testing::suite_batch(); }
constexpr int seq = 16;

struct Outcome {
    std::vector<float> losses;
    std::vector<double> norms;
    std::vector<float> first_grads;  // this rank's gradient shards after the first step
    std::vector<float> params;       // this rank's weight shards after the last step
};

// A model of either family on one of its grids, in fp32 or bf16.
struct ModelOnGrid {
    std::string family;
    ModelConfig model;
    GridShape grid;
    DType precision;
};

// `steps` AdamW steps of the model on its grid, run as `options` says.
Outcome train(ModelOnGrid const& run, StepOptions options, int steps) {
    options.model.precision = run.precision;
    GridShape const& shape = run.grid;
    ProcessGrid grid(MPI_COMM_WORLD, shape);
    std::unique_ptr<Backend> const backend = make_step_backend(options, false);
    int const rows = batch() / shape.batch_replicas();
    Decoder model(run.model.architecture(), *backend, grid, options.pass_batch(rows), seq, options.model);
    model.init_weights(42);
    AdamW optimizer(model.segments(), model.layout().total(), *backend, AdamWConfig{});
    std::vector<std::int32_t> tokens(batch() * seq), targets(tokens.size());
    Outcome outcome;
    for (int step = 0; step < steps; ++step) {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            tokens[i] = static_cast<std::int32_t>(philox4x32({9, static_cast<std::uint64_t>(step)}, i)[0] % 300);
            targets[i] = i % 11 == 3 ? -1 : static_cast<std::int32_t>(philox4x32({9, 100u + step}, i)[0] % 300);
        }
        std::vector<Batch> const passes =
            micro_batches(replica_rows(grid, batch(), seq, tokens.data(), targets.data()), options.micro_batch);
        StepResult const result = train_step(model, optimizer, passes, 1e-3f);
        outcome.losses.push_back(result.loss);
        outcome.norms.push_back(result.grad_norm);
        if (step == 0) outcome.first_grads.assign(model.grads().begin(), model.grads().end());
    }
    outcome.params.assign(model.params().begin(), model.params().end());
    return outcome;
}

std::string run_name(ModelOnGrid const& run) {
    return run.family + (run.precision == DType::bf16 ? "_bf16_" : "_") + testing::grid_test_name(run.grid);
}

// What 3 AdamW steps of `run` with `options` (named `how`) gave, trained once per process: several tests compare
// with the same run (the default is the overlap test's "on" and the recomputation test's reference), and the first
// of 3 steps is a 1-step run. A test run alone trains what it needs.
Outcome const& three_steps(ModelOnGrid const& run, std::string const& how, StepOptions const& options) {
    static std::map<std::string, Outcome> outcomes;
    std::string const key = run_name(run) + "/" + how;
    auto found = outcomes.find(key);
    if (found == outcomes.end()) found = outcomes.emplace(key, train(run, options, 3)).first;
    return found->second;
}

void expect_bitwise_equal(Outcome const& a, Outcome const& b) {
    EXPECT_EQ(a.losses, b.losses);
    EXPECT_EQ(a.norms, b.norms);
    EXPECT_EQ(a.first_grads, b.first_grads);
    EXPECT_EQ(a.params, b.params);
}

StepOptions with_overlap(bool on) {
    StepOptions options;
    options.model.overlap = on;
    return options;
}

StepOptions with_micro_batch(int rows) {
    StepOptions options;
    options.micro_batch = rows;
    return options;
}

class StepOptionsOnGrid : public ::testing::TestWithParam<ModelOnGrid> {};

TEST_P(StepOptionsOnGrid, OverlapOnAndOffAreBitwiseEqual) {
    EXPECT_TRUE(StepOptions{}.model.overlap) << "the default run must be the overlap-on run";
    expect_bitwise_equal(three_steps(GetParam(), "default", StepOptions{}),
                         three_steps(GetParam(), "overlap off", with_overlap(false)));
}

TEST_P(StepOptionsOnGrid, RecomputationIsBitwiseEqualToKeepingActivations) {
    StepOptions recompute;
    recompute.model.recompute = Recompute::layer;
    expect_bitwise_equal(three_steps(GetParam(), "recompute", recompute),
                         three_steps(GetParam(), "default", StepOptions{}));
}

TEST_P(StepOptionsOnGrid, CachedWeightsAreBitwiseEqualToGatheringPerUse) {
    StepOptions cached = with_micro_batch(1);  // the cache serves every later pass
    cached.model.cache_weights = true;
    expect_bitwise_equal(three_steps(GetParam(), "cached weights, micro-batch 1", cached),
                         three_steps(GetParam(), "micro-batch 1", with_micro_batch(1)));
}

// The first step of each run.
TEST_P(StepOptionsOnGrid, MicroBatchesGiveTheWholeBatchsLossAndGradients) {
    Outcome const& passes = three_steps(GetParam(), "micro-batch 1", with_micro_batch(1));
    Outcome const& whole = three_steps(GetParam(), "default", StepOptions{});
    double const tolerance = GetParam().precision == DType::bf16 ? 2e-3 : 1e-6;
    EXPECT_LT(std::abs(passes.losses[0] - whole.losses[0]) / std::abs(whole.losses[0]), tolerance);
    EXPECT_LT(std::abs(passes.norms[0] - whole.norms[0]) / whole.norms[0], tolerance);
    EXPECT_LT(relative_difference(passes.first_grads, whole.first_grads), tolerance);
}

// Every grid of this world size that each family splits on.
std::vector<ModelOnGrid> models_on_grids() {
    std::vector<ModelOnGrid> runs;
    for (auto const& [family, model] : {std::pair<std::string, ModelConfig>{"gpt2", micro_model()},
                                        std::pair<std::string, ModelConfig>{"llama", micro_llama()}}) {
        for (GridShape const& grid : testing::suite_grids(model, batch())) {
            for (DType const precision : {DType::f32, DType::bf16}) runs.push_back({family, model, grid, precision});
        }
    }
    return runs;
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, StepOptionsOnGrid, ::testing::ValuesIn(models_on_grids()),
                         [](::testing::TestParamInfo<ModelOnGrid> const& info) { return run_name(info.param); });

}  // namespace test_step_options
}  // namespace axonn
