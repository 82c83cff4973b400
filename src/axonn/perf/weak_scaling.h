// Weak scaling on paper (`axonn plan --weak-scaling`): a series of jobs, each a larger model on more devices with a
// batch that grows with the devices, each planned on its best grid; the throughput per device against the first
// point's is the series' efficiency. Where the model predicts an efficiency above 1 (super-linear), it says why.
#pragma once

#include "axonn/perf/planner.h"

#include <optional>
#include <string>
#include <vector>

namespace axonn {

struct WeakScalingPoint {
    std::string label;        // the model's name, for the table and the plot
    PlanRequest request;
    std::optional<PlanCandidate> best;  // none when no grid fits
    double efficiency = 0;    // hardware FLOP/s per device / the first point's
    double compute_pct_peak = 0;   // hardware FLOPs over the compute time alone (no communication), % of peak
    double exposed_fraction = 0;   // exposed communication / step time
};

// Plans every point (in the order given) and fills best, efficiency and the two explanatory shares.
void plan_weak_scaling(std::vector<WeakScalingPoint>& points);

// Why a point's efficiency exceeds 1, from the shares that changed since the first point; nullopt where it does not.
std::optional<std::string> super_linear_reason(WeakScalingPoint const& first, WeakScalingPoint const& point);

}  // namespace axonn
