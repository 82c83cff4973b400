// Predicted time of one training step on a machine: compute from a GEMM-efficiency model per shape and the other
// kernels from memory bandwidth; each collective from a placement-aware bandwidth and latency model (a group
// inside a node gets the node's links; a group across nodes shares the node's network cards with the other
// groups of its axis that cross at the same time, as AxoNN's model does) and its algorithm's factor (ring, or tree
// when that is cheaper). Beyond AxoNN's model, which only sums traffic: with overlap on, each collective hides
// behind the computation it can run under (dX all-reduce behind the dW GEMM, dW reduce-scatter behind the rest of
// the backward, weight all-gathers prefetched a layer ahead), so the prediction is the iteration time and the
// communication left exposed. Collectives on the same links queue behind one another; those inside a node and
// those leaving it cross different links and run side by side.
#pragma once

#include "axonn/perf/machine_profile.h"
#include "axonn/perf/traffic_model.h"

#include <array>
#include <cstdint>
#include <map>

namespace axonn {

// The GEMMs run at the bf16 or the fp32 rate as the step's precision says (StepShape::run).
struct TimeOptions {
    std::array<Axis, 4> order = {Axis::x, Axis::y, Axis::z, Axis::data};
};

struct TimePrediction {
    double gemm_s = 0;
    double other_compute_s = 0;  // memory-bound kernels and the optimizer
    // The computation of the forward, and of the backward with its recomputed forwards: collectives issued in one
    // hide only behind it. The optimizer's step, after both, is the rest of the compute.
    double forward_compute_s = 0;
    double backward_compute_s = 0;
    double comm_s = 0;           // every collective, as if none overlapped
    std::map<Group, double> comm_by_group;
    double exposed_comm_s = 0;   // what stays on the critical path
    // By group: the collectives waited for at once, and the overlapped ones of the queue each phase waits for (the
    // node's links or its cards: the other queue's finish meanwhile and count as hidden).
    std::map<Group, double> exposed_by_group;
    double time_s = 0;           // compute + exposed communication
    // The most bytes one rank puts into one call: an all-reduce's buffer, a gather's or scatter's slice per rank.
    // Past MPI's int count of elements, the comm layer splits that collective into several MPI calls.
    std::uint64_t largest_call_bytes = 0;
};

TimePrediction predict_step_time(StepShape const& step, MachineProfile const& machine, TimeOptions const& options);

// Seconds of `calls` collectives of `bytes` in total on `group` of this grid. A group inside one node (every group
// of its axis: none straddles a node boundary) gets the bus bandwidth measured for its stride and size; one that
// leaves the node gets the node's injection bandwidth divided among the groups of its axis on that node.
double collective_seconds(PredictedCollective const& collective, GridShape const& grid,
                          std::array<Axis, 4> const& order, MachineProfile const& machine);

}  // namespace axonn
