#include "axonn/train/train_step.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <cmath>

namespace axonn {

int StepOptions::pass_batch(int replica_batch) const {
    require(micro_batch >= 0, "--micro-batch must not be negative, got {} (0: no micro-batches)", micro_batch);
    if (micro_batch == 0) return replica_batch;
    require(replica_batch % micro_batch == 0, "--micro-batch {} does not divide the {} sequences of each data x z "
            "replica: choose a divisor of {}", micro_batch, replica_batch, replica_batch);
    return micro_batch;
}

Batch replica_rows(ProcessGrid const& grid, int B, int T, std::int32_t const* tokens, std::int32_t const* targets) {
    int const rows = B / (grid.size(Axis::data) * grid.size(Axis::z));
    std::int64_t const first = static_cast<std::int64_t>(grid.batch_replica()) * rows * T;
    return {rows, T, tokens + first, targets + first, nullptr};
}

std::vector<Batch> micro_batches(Batch const& rows, int micro_batch) {
    int const size = micro_batch > 0 ? micro_batch : rows.B;
    invariant(rows.B % size == 0, "micro-batches of {} sequences do not divide {}", size, rows.B);
    std::vector<Batch> passes;
    for (int first = 0; first < rows.B; first += size) {
        std::int64_t const offset = static_cast<std::int64_t>(first) * rows.T;
        passes.push_back({size, rows.T, rows.tokens + offset, rows.targets + offset,
                          rows.loss_mask ? rows.loss_mask + offset : nullptr});
    }
    return passes;
}

std::unique_ptr<Backend> make_step_backend(StepOptions& options, bool announce) {
    std::string fallback;
    std::unique_ptr<Backend> backend = make_backend("cpu", options.model.precision, &fallback);
    if (!fallback.empty()) {
        if (announce) {
            fmt::print(stderr, "axonn: warning: --precision bf16 is not available here ({}); running in fp32\n",
                       fallback);
        }
        options.model.precision = DType::f32;
    }
    backend->set_gemm_tuning(options.gemm_tuning);
    return backend;
}

StepResult train_step(Gpt& model, AdamW& optimizer, std::span<Batch const> passes, float learning_rate) {
    // One pass normalises its loss itself; several share the step's total loss weight.
    double const total = passes.size() > 1 ? model.global_loss_weight(passes) : 0.0;
    float loss = 0.0f;
    for (std::size_t p = 0; p < passes.size(); ++p) {
        loss += model.train_forward(passes[p], Pass{total, p == 0, p + 1 == passes.size()});
        model.backward();
    }
    double const norm = model.gradient_norm();
    if (!std::isfinite(loss) || !std::isfinite(norm)) return {loss, norm, false};
    Gpt::UpdateTarget const target = model.update_target();
    optimizer.step(target.params, model.grads(), norm, learning_rate, target.gemm_copy);
    return {loss, norm, true};
}

float eval_step(Gpt& model, std::span<Batch const> passes) {
    double const total = passes.size() > 1 ? model.global_loss_weight(passes) : 0.0;
    float loss = 0.0f;
    for (Batch const& pass : passes) loss += model.forward(pass, total);
    return loss;
}

}  // namespace axonn
