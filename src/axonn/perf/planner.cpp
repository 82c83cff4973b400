#include "axonn/perf/planner.h"

#include "axonn/core/error.h"
#include "axonn/parallel/shard_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace axonn {
namespace {

std::optional<std::string> batch_problem(PlanRequest const& request, GridShape const& grid) {
    int const replicas = grid.batch_replicas();
    if (request.micro_batch > 0 && (request.batch / replicas) % request.micro_batch != 0) {
        return fmt::format("the micro-batch {} does not divide the {} sequences of a data x z replica",
                           request.micro_batch, request.batch / replicas);
    }
    return std::nullopt;
}

// The predicted memory, time and efficiency of a grid the model and batch allow, or why it cannot run.
void predict(PlanCandidate& candidate, PlanRequest const& request) {
    StepShape const step{request.model, candidate.grid, request.batch, request.seq, request.micro_batch,
                         request.run};
    try {
        candidate.memory = predict_memory(step);
    } catch (Error const& too_large) {  // sizes beyond 64 bits
        candidate.excluded = too_large.what();
        return;
    }
    bool const bf16 = request.run.precision == DType::bf16;
    double const peak = bf16 ? request.machine.peak_flops_bf16 : request.machine.peak_flops_fp32;
    Architecture const model = step.decoder();
    double const model_flops = model.model_flops_per_token(request.seq) * request.batch * request.seq;
    candidate.time = predict_step_time(step, request.machine, request.time);
    candidate.flops_per_s = model_flops / candidate.time.time_s;
    candidate.pct_peak = 100.0 * candidate.flops_per_s / (peak * request.devices);
    bool const recompute = request.run.recompute == Recompute::layer;
    candidate.hardware_flops_per_s =
        model.hardware_flops_per_step(request.batch, request.seq, recompute) / candidate.time.time_s;
    candidate.hardware_pct_peak = 100.0 * candidate.hardware_flops_per_s / (peak * request.devices);
    // The smallest element the step communicates decides how many elements the largest call may hold.
    bool const bf16_comm = bf16 || request.run.grad_scatter_comm == DType::bf16 ||
                           request.run.grad_sum_comm == DType::bf16;
    candidate.split_collectives =
        candidate.time.largest_call_bytes / (bf16_comm ? 2u : 4u) > static_cast<std::uint64_t>(INT_MAX);
    if (static_cast<double>(candidate.memory.total()) > request.machine.memory_bytes) {
        candidate.excluded = fmt::format("needs {:.1f} GiB per device, a device has {:.1f} GiB",
                                         candidate.memory.total() / 1073741824.0,
                                         request.machine.memory_bytes / 1073741824.0);
    }
}

}  // namespace

void validate_plan_request(PlanRequest const& request) {
    request.model.validate();
    AXONN_REQUIRE(request.devices > 0, "--gpus must be at least 1, got {}", request.devices);
    AXONN_REQUIRE(request.devices <= max_plan_devices,
                  "--gpus {} is more than the {} devices the planner covers: plan a "
                  "part of the machine",
                  request.devices, max_plan_devices);
    AXONN_REQUIRE(request.batch > 0, "--batch must be at least 1, got {}", request.batch);
    int const context = request.model.context();
    AXONN_REQUIRE(request.seq > 0 && request.seq <= context, "--seq {} must lie in [1, the model's context {}]",
                  request.seq, context);
    AXONN_REQUIRE(request.micro_batch >= 0, "--micro-batch must not be negative, got {} (0: no accumulation)",
                  request.micro_batch);
}

std::vector<PlanCandidate> plan_grids(PlanRequest const& request) {
    validate_plan_request(request);
    Architecture const model = request.model.architecture();
    std::vector<PlanCandidate> candidates;
    for (GridShape const& grid : grid_factorisations(request.devices)) {
        PlanCandidate candidate;
        candidate.grid = grid;
        Architecture const laid_out = model.with_vocab_split(request.run.vocab_split, grid, request.run.precision);
        candidate.vocab_split = laid_out.vocab_split;
        candidate.excluded = grid_problem(laid_out.declarations, grid, request.batch);
        if (!candidate.excluded) candidate.excluded = batch_problem(request, grid);
        if (!candidate.excluded) predict(candidate, request);
        candidates.push_back(std::move(candidate));
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](PlanCandidate const& a, PlanCandidate const& b) {
        if (a.excluded.has_value() != b.excluded.has_value()) return !a.excluded.has_value();
        return !a.excluded && a.time.time_s < b.time.time_s;
    });
    return candidates;
}

}  // namespace axonn
