// The parity run (train/parity.h) the MPI suites compare every grid with: a model on a grid for some steps, on the
// suites' batch (support/micro_model.h).
#pragma once

#include "axonn/train/parity.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace axonn::testing {

inline ParityOptions suite_parity(ModelConfig const& model, GridShape const& grid, int steps) {
    ParityOptions options;
    options.model = model;
    options.grid = grid;
    options.steps = steps;
    options.batch = suite_batch();
    return options;
}

// One step on a grid against the serial run in the same precision: bit-identical initial weights, and logits,
// loss, gradient norm and each of the `tensors` gradients within `tolerance` norm-wise.
inline void expect_step_near_serial(ParityOptions const& options, std::size_t tensors, double tolerance) {
    ParityReport const report = run_parity(options);
    EXPECT_EQ(report.precision, options.run.model.precision);
    EXPECT_EQ(report.init_max_abs_diff, 0.0) << "initial weights differ from serial";
    EXPECT_LT(report.logits_rel_diff, tolerance);
    EXPECT_LT(report.loss_rel_diff.at(0), tolerance);
    EXPECT_LT(report.grad_norm_rel_diff.at(0), tolerance);
    EXPECT_EQ(report.grad_rel_diff.size(), tensors);
    for (auto const& [name, difference] : report.grad_rel_diff) {
        EXPECT_LT(difference, tolerance) << "gradient of " << name;
    }
}

// The tolerance of one fp32 step: 1e-5 (the grid sums in another order).
inline constexpr double fp32_step_tolerance = 1e-5;
// One bf16 step (both families' Bf16OneStepMatchesSerialBf16): 2e-2, as the grid rounds each all-reduced partial
// sum to bf16; the initial weights are still bit-identical (bf16 copies of the same fp32 weights).
inline constexpr double bf16_step_tolerance = 2e-2;

inline void expect_bf16_step_near_serial(ModelConfig const& model, GridShape const& grid, std::size_t tensors) {
    ParityOptions options = suite_parity(model, grid, 1);
    options.run.model.precision = DType::bf16;
    expect_step_near_serial(options, tensors, bf16_step_tolerance);
}

// Each vocabulary layout named (--vocab-split xy and y), where the default takes whichever moves fewer bytes: one
// fp32 and one bf16 step each, with its precision's tolerance.
inline void expect_both_vocab_splits_near_serial(ModelConfig const& model, GridShape const& grid, std::size_t tensors) {
    for (VocabSplit const split : {VocabSplit::xy, VocabSplit::y}) {
        for (DType const precision : {DType::f32, DType::bf16}) {
            ParityOptions options = suite_parity(model, grid, 1);
            options.run.model.vocab_split = split;
            options.run.model.precision = precision;
            double const tolerance = precision == DType::bf16 ? bf16_step_tolerance : fp32_step_tolerance;
            expect_step_near_serial(options, tensors, tolerance);
        }
    }
}

}  // namespace axonn::testing
