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

// One bf16 step on a grid against the serial bf16 run (both families' Bf16OneStepMatchesSerialBf16): bit-identical
// initial weights (bf16 copies of the same fp32 weights), and logits, loss, gradient norm and each of the
// `tensors` gradients within 2e-2 norm-wise (the grid rounds each all-reduced partial sum to bf16).
inline void expect_bf16_step_near_serial(ModelConfig const& model, GridShape const& grid, std::size_t tensors) {
    ParityOptions options = suite_parity(model, grid, 1);
    options.run.model.precision = DType::bf16;
    ParityReport const report = run_parity(options);
    EXPECT_EQ(report.precision, DType::bf16);
    EXPECT_EQ(report.init_max_abs_diff, 0.0) << "initial weights differ from serial";
    EXPECT_LT(report.logits_rel_diff, 2e-2);
    EXPECT_LT(report.loss_rel_diff.at(0), 2e-2);
    EXPECT_LT(report.grad_norm_rel_diff.at(0), 2e-2);
    EXPECT_EQ(report.grad_rel_diff.size(), tensors);
    for (auto const& [name, difference] : report.grad_rel_diff) EXPECT_LT(difference, 2e-2) << "gradient of " << name;
}

}  // namespace axonn::testing
