#include "axonn/train/train_step.h"

#include "axonn/core/error.h"
#include "axonn/parallel/batch_sum.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace axonn {

int StepOptions::pass_batch(int replica_batch) const {
    AXONN_REQUIRE(micro_batch >= 0, "--micro-batch must not be negative, got {} (0: no micro-batches)", micro_batch);
    if (micro_batch == 0) return replica_batch;
    AXONN_REQUIRE(replica_batch % micro_batch == 0,
                  "--micro-batch {} does not divide the {} sequences of each data x z "
                  "replica: choose a divisor of {}",
                  micro_batch, replica_batch, replica_batch);
    return micro_batch;
}

Batch replica_rows(ProcessGrid const& grid, int B, int T, std::int32_t const* tokens, std::int32_t const* targets,
                   float const* loss_mask) {
    int const rows = B / grid.shape().batch_replicas();
    std::int64_t const first = static_cast<std::int64_t>(grid.batch_replica()) * rows * T;
    return {rows, T, tokens + first, targets ? targets + first : nullptr, loss_mask ? loss_mask + first : nullptr};
}

std::vector<Batch> micro_batches(Batch const& rows, int micro_batch) {
    int const size = micro_batch > 0 ? micro_batch : rows.B;
    AXONN_INVARIANT(rows.B % size == 0, "micro-batches of {} sequences do not divide {}", size, rows.B);
    std::vector<Batch> passes;
    for (int first = 0; first < rows.B; first += size) {
        std::int64_t const offset = static_cast<std::int64_t>(first) * rows.T;
        passes.push_back({size, rows.T, rows.tokens + offset, rows.targets ? rows.targets + offset : nullptr,
                          rows.loss_mask ? rows.loss_mask + offset : nullptr});
    }
    return passes;
}

std::unique_ptr<Backend> make_step_backend(StepOptions& options, bool announce) {
    std::string emulation;
    std::unique_ptr<Backend> backend =
        as_usage_errors([&] { return make_backend(options.backend, options.model.precision, &emulation); });
    if (!emulation.empty() && announce) {
        fmt::print(stderr,
                   "axonn: note: bf16 GEMMs are emulated here ({}): operands rounded to bf16, products and sums in "
                   "fp32, as a native bf16 GEMM computes them, at the fp32 GEMM's speed or below\n",
                   emulation);
    }
    backend->set_gemm_tuning(options.gemm_tuning);
    return backend;
}

namespace {

// Σ loss and count over every target of a pass, and over its kept targets (mask weight): added into sums[4].
void add_masked_sums(Decoder const& model, Batch const& pass, std::array<double, 4>& sums) {
    float const* losses = model.token_losses();
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(pass.B) * pass.T; ++i) {
        if (pass.targets[i] < 0) continue;
        sums[0] += losses[i];
        sums[1] += 1.0;
        sums[2] += pass.loss_mask[i] * static_cast<double>(losses[i]);
        sums[3] += pass.loss_mask[i];
    }
}

double mean_or_nan(double sum, double count) { return count > 0 ? sum / count : std::nan(""); }

}  // namespace

StepResult train_step(Decoder& model, AdamW& optimizer, std::span<Batch const> passes, float learning_rate) {
    // One pass normalises its loss itself; several share the step's total loss weight.
    double const total = passes.size() > 1 ? model.global_loss_weight(passes) : 0.0;
    bool const masked = passes.front().loss_mask != nullptr;
    std::array<double, 4> sums{};  // Σ loss and count over all targets, then over the kept ones
    float loss = 0.0f;
    for (std::size_t p = 0; p < passes.size(); ++p) {
        loss += model.train_forward(passes[p], Pass{total, p == 0, p + 1 == passes.size()});
        if (masked) add_masked_sums(model, passes[p], sums);
        model.backward();
    }
    StepResult result{loss, model.gradient_norm(), false, std::nullopt};
    if (masked) {  // the rows of the global batch are split over Z and data
        sum_over_batch(model.grid(), sums);
        result.masked = MaskedLosses{mean_or_nan(sums[0], sums[1]), mean_or_nan(sums[2], sums[3]),
                                     mean_or_nan(sums[0] - sums[2], sums[1] - sums[3])};
    }
    if (!std::isfinite(loss) || !std::isfinite(result.grad_norm)) return result;
    Decoder::UpdateTarget const target = model.update_target();
    optimizer.step(target.params, target.grads, result.grad_norm, learning_rate, target.gemm_copy);
    model.backend().synchronize();  // a device backend's step ends when its update has run
    result.updated = true;
    return result;
}

float eval_step(Decoder& model, std::span<Batch const> passes) {
    double const total = passes.size() > 1 ? model.global_loss_weight(passes) : 0.0;
    float loss = 0.0f;
    for (Batch const& pass : passes) loss += model.forward(pass, total);
    return loss;
}

}  // namespace axonn
