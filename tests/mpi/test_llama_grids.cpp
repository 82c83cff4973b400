// Llama on every grid gives the serial answer: under mpirun at np 1, 2, 4 and 8 (and 3 and 6, on the grids and
// shapes of support/micro_model.h), a small Llama (vocabulary 300
// padded to 320, width 64, 8 query heads sharing 2 key/value heads, an MLP of 96, 2 layers) runs serially and on
// every grid (with y = 4 or 8, more Y ranks than key/value heads, each key/value head is replicated on y/2 ranks and
// its replicas' gradients summed), from the same seed and batches (train/parity.h):
//   - the gathered initial weights are bit-identical to the serial ones;
//   - after one step, the logits, the loss and every gathered gradient tensor are within 1e-5 relative of serial
//     (norm-wise, per tensor), and the gradient norm too; over 10 AdamW steps every loss within 1e-4;
//   - in mixed precision, one step against the serial bf16 run within 2e-2 (GPT-2's bound);
//   - with --grad-comm bf16, every gradient within 1e-2 (the bound of test_model_grids.cpp: bf16 rounding at each
//     partial sum), and on a grid whose key/value replicas are summed over Y (y > 2), qkvw's gradient shows that
//     rounding (above 1e-5): the replicas' sum moves bf16 too;
//   - all with the default vocabulary layout (whichever moves fewer bytes over X), and with each layout named one
//     fp32 and one bf16 step, each within its precision's bound, where X is split.
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/train/parity.h"
#include "support/micro_model.h"
#include "support/suite_parity.h"

#include <gtest/gtest.h>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_llama_grids {

using testing::micro_llama;

class LlamaOnGrid : public ::testing::TestWithParam<GridShape> {};

ParityOptions llama_parity(GridShape const& grid, int steps) {
    return testing::suite_parity(micro_llama(), grid, steps);
}

TEST_P(LlamaOnGrid, OneStepMatchesSerial) {
    testing::expect_step_near_serial(llama_parity(GetParam(), 1), 9, testing::fp32_step_tolerance);
}

// Each vocabulary layout named (the rest run with the default, whichever moves fewer bytes), its untied head's
// block too, on the grids with x > 1 (elsewhere the two layouts are one).
class LlamaVocabularyLayoutOnGrid : public ::testing::TestWithParam<GridShape> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LlamaVocabularyLayoutOnGrid);  // no grid of 1 or 3 ranks splits X

TEST_P(LlamaVocabularyLayoutOnGrid, EachOneStepMatchesSerial) {
    testing::expect_both_vocab_splits_near_serial(micro_llama(), GetParam(), 9);
}

TEST_P(LlamaOnGrid, TenAdamWStepsFollowSerialLosses) {
    ParityReport const report = run_parity(llama_parity(GetParam(), 10));
    ASSERT_EQ(report.loss_rel_diff.size(), 10u);
    for (std::size_t step = 0; step < 10; ++step) EXPECT_LT(report.loss_rel_diff[step], 1e-4) << "step " << step;
}

// In mixed precision, one step against the serial bf16 run, with GPT-2's tolerance (test_model_grids.cpp,
// Bf16OneStepMatchesSerialBf16): 2e-2 norm-wise for logits, loss and each gradient, from bit-identical weights.
TEST_P(LlamaOnGrid, Bf16OneStepMatchesSerialBf16) {
    testing::expect_bf16_step_near_serial(micro_llama(), GetParam(), 9);
}

TEST_P(LlamaOnGrid, Bf16GradientCommunicationStaysNearSerial) {
    ParityOptions options = llama_parity(GetParam(), 1);
    options.run.model.grad_scatter_comm = options.run.model.grad_sum_comm = DType::bf16;
    ParityReport const report = run_parity(options);
    EXPECT_LT(report.logits_rel_diff, 1e-5);
    EXPECT_LT(report.loss_rel_diff.at(0), 1e-5);
    EXPECT_LT(report.grad_norm_rel_diff.at(0), 1e-2);
    for (auto const& [name, difference] : report.grad_rel_diff) EXPECT_LT(difference, 1e-2) << "gradient of " << name;
    if (GetParam().y > micro_llama().num_key_value_heads) {
        EXPECT_GT(report.grad_rel_diff.at("qkvw"), 1e-5) << "no bf16 rounding in the key/value replicas' sum";
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, LlamaOnGrid,
                         ::testing::ValuesIn(testing::suite_grids(micro_llama(), testing::suite_batch())),
                         [](auto const& info) { return testing::grid_test_name(info.param); });

INSTANTIATE_TEST_SUITE_P(
    GridsSplittingX, LlamaVocabularyLayoutOnGrid,
    ::testing::ValuesIn(testing::grids_splitting_x(testing::suite_grids(micro_llama(), testing::suite_batch()))),
    [](auto const& info) { return testing::grid_test_name(info.param); });

}  // namespace test_llama_grids

}  // namespace axonn
