#include "axonn/perf/weak_scaling.h"

#include <fmt/format.h>

namespace axonn {
namespace {

double peak_per_device(PlanRequest const& request) {
    return request.run.precision == DType::bf16 ? request.machine.peak_flops_bf16 : request.machine.peak_flops_fp32;
}

}  // namespace

void plan_weak_scaling(std::vector<WeakScalingPoint>& points) {
    for (WeakScalingPoint& point : points) {
        std::vector<PlanCandidate> const plan = plan_grids(point.request);
        if (plan.empty() || plan.front().excluded) continue;
        PlanCandidate const& best = plan.front();
        point.best = best;
        double const compute_s = best.time.gemm_s + best.time.other_compute_s;
        double const peak = peak_per_device(point.request) * point.request.devices;
        point.compute_pct_peak = 100.0 * best.hardware_flops_per_s * best.time.time_s / compute_s / peak;
        point.exposed_fraction = best.time.exposed_comm_s / best.time.time_s;
    }
    WeakScalingPoint const* first = nullptr;
    for (WeakScalingPoint& point : points) {
        if (!point.best) continue;
        if (first == nullptr) first = &point;
        double const per_device = point.best->hardware_flops_per_s / point.request.devices;
        point.efficiency = per_device / (first->best->hardware_flops_per_s / first->request.devices);
    }
}

std::optional<std::string> super_linear_reason(WeakScalingPoint const& first, WeakScalingPoint const& point) {
    if (!point.best || !first.best || point.efficiency <= 1.0) return std::nullopt;
    std::string reason = fmt::format("{} on {} devices runs at {:.1f}% of the first point's speed per device",
                                     point.label, point.request.devices, 100.0 * point.efficiency);
    std::string because;
    if (point.compute_pct_peak > first.compute_pct_peak) {
        because = fmt::format("its larger GEMMs run nearer the peak (its computation alone at {:.1f}% of peak, the "
                              "first point's at {:.1f}%)", point.compute_pct_peak, first.compute_pct_peak);
    }
    if (point.exposed_fraction < first.exposed_fraction) {
        because += fmt::format("{}less of its step is exposed communication ({:.1f}% against {:.1f}%)",
                               because.empty() ? "" : ", and ", 100.0 * point.exposed_fraction,
                               100.0 * first.exposed_fraction);
    }
    return reason + (because.empty() ? "" : ": " + because);
}

}  // namespace axonn
