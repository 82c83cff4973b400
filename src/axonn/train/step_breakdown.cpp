#include "axonn/train/step_breakdown.h"

#include "axonn/core/error.h"
#include "axonn/kernels/tracing_backend.h"

#include <string_view>

namespace axonn {
namespace {

// The field a kernel of this kind adds to.
double& kind_seconds(StepBreakdown& breakdown, char const* category) {
    std::string_view const kind = category != nullptr ? category : "";
    if (kind == kernel_kind::gemm) return breakdown.gemm_s;
    if (kind == kernel_kind::attention) return breakdown.attention_s;
    if (kind == kernel_kind::norm) return breakdown.norm_s;
    if (kind == kernel_kind::elementwise) return breakdown.elementwise_s;
    AXONN_INVARIANT(kind == kernel_kind::optimizer, "a kernel span of no known kind: '{}'", kind);
    return breakdown.optimizer_s;
}

}  // namespace

void StepBreakdownSum::add_step(std::span<TraceEvent const> events, double waited_s, double step_s) {
    for (TraceEvent const& event : events) {
        if (event.track != TraceTrack::kernels) continue;
        double const seconds = event.end_s - event.begin_s;
        kind_seconds(sum_, event.category) += seconds;
        sum_.kernel_s[event.name] += seconds;
    }
    sum_.comm_exposed_s += waited_s;
    sum_.step_s += step_s;
    ++sum_.steps;
}

StepBreakdown StepBreakdownSum::mean() const {
    StepBreakdown mean = sum_;
    if (mean.steps == 0) return mean;
    double const n = mean.steps;
    for (double* field : {&mean.step_s, &mean.gemm_s, &mean.attention_s, &mean.norm_s, &mean.elementwise_s,
                          &mean.optimizer_s, &mean.comm_exposed_s}) {
        *field /= n;
    }
    for (auto& [name, seconds] : mean.kernel_s) seconds /= n;
    mean.rest_s = mean.step_s - mean.gemm_s - mean.attention_s - mean.norm_s - mean.elementwise_s - mean.optimizer_s -
                  mean.comm_exposed_s;
    return mean;
}

}  // namespace axonn
