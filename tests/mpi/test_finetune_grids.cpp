// Fine-tuning batches carry a loss mask that leaves the prompt targets out (prepare --format jsonl). Under mpirun
// at np 1, 2, 4 and 8, on every grid of gpt2-micro (B = 8, T = 16; at np 3 and 6 the grids and shapes of
// support/micro_model.h):
//   - a batch whose rows start with prompts of different lengths, one row all prompt (so that on some grids a
//     data x z replica, or a micro-batch of one sequence, holds no target that counts): one step's loss and
//     gradient norm follow the serial step's within 1e-5 relative, in one pass and in micro-batches;
//   - a batch with no target that counts is a step of loss 0 and gradient norm 0 on every grid, not NaN.
// Assertions are EXPECT_: a rank that left a test early would leave the others waiting in a collective.
#include "axonn/core/rng.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_finetune_grids {

using testing::micro_model;
using testing::world_size;

// The suites' batch (support/micro_model.h); a function, since the world size is known only once MPI runs.
int batch() { return testing::suite_batch(); }
constexpr int seq = 16;

// Row b's first 2 + b targets are its prompt's (mask 0), the rest its response's; row 1 is all prompt.
std::vector<float> prompt_mask() {
    std::vector<float> mask(batch() * seq);
    for (int b = 0; b < batch(); ++b) {
        for (int t = 0; t < seq; ++t) mask[b * seq + t] = b != 1 && t >= 2 + b ? 1.0f : 0.0f;
    }
    return mask;
}

struct StepOutcome {
    float loss;
    double grad_norm;
};

// One AdamW step of gpt2-micro on `grid` (the serial model when it is one rank's) over a fixed batch.
StepOutcome masked_step(ProcessGrid& grid, int micro_batch, std::vector<float> const& mask) {
    CpuBackend backend;
    StepOptions options;
    options.micro_batch = micro_batch;
    GridShape const shape = grid.shape();
    Decoder model(micro_model(), backend, grid, options.pass_batch(batch() / shape.batch_replicas()), seq, options.model);
    model.init_weights(7);
    AdamW optimizer(model.segments(), model.layout().total(), backend, AdamWConfig{});
    std::vector<std::int32_t> tokens(batch() * seq), targets(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>(philox4x32({5, 0}, i)[0] % 300);
        targets[i] = static_cast<std::int32_t>(philox4x32({5, 1}, i)[0] % 300);
    }
    std::vector<Batch> const passes =
        micro_batches(replica_rows(grid, batch(), seq, tokens.data(), targets.data(), mask.data()), micro_batch);
    StepResult const result = train_step(model, optimizer, passes, 1e-3f);
    EXPECT_TRUE(result.updated);
    return {result.loss, result.grad_norm};
}

class FinetuneOnGrid : public ::testing::TestWithParam<GridShape> {};

TEST_P(FinetuneOnGrid, MaskedPromptsGiveTheSerialLossAndGradientNorm) {
    std::vector<float> const mask = prompt_mask();
    ProcessGrid self(MPI_COMM_SELF, GridShape{});
    StepOutcome const serial = masked_step(self, 0, mask);
    ProcessGrid grid(MPI_COMM_WORLD, GetParam());
    for (int micro_batch : {0, 1}) {
        StepOutcome const parallel = masked_step(grid, micro_batch, mask);
        EXPECT_LT(std::abs(parallel.loss - serial.loss) / serial.loss, 1e-5) << "micro-batch() " << micro_batch;
        EXPECT_LT(std::abs(parallel.grad_norm - serial.grad_norm) / serial.grad_norm, 1e-5)
            << "micro-batch() " << micro_batch;
    }
}

TEST_P(FinetuneOnGrid, ABatchWithNoTargetThatCountsIsAStepOfZeroLossAndGradient) {
    std::vector<float> const nothing(batch() * seq, 0.0f);
    ProcessGrid grid(MPI_COMM_WORLD, GetParam());
    for (int micro_batch : {0, 1}) {
        StepOutcome const step = masked_step(grid, micro_batch, nothing);
        EXPECT_EQ(step.loss, 0.0f) << "micro-batch() " << micro_batch;
        EXPECT_EQ(step.grad_norm, 0.0) << "micro-batch() " << micro_batch;
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, FinetuneOnGrid, ::testing::ValuesIn(testing::suite_grids(micro_model(), batch())),
                         [](::testing::TestParamInfo<GridShape> const& info) {
                             return testing::grid_test_name(info.param);
                         });

}  // namespace test_finetune_grids
}  // namespace axonn
