#include "axonn/perf/time_model.h"

#include "axonn/parallel/shard_layout.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace axonn {
namespace {

using Overlap = PredictedCollective::Overlap;

std::vector<Axis> group_axes(Group group) {
    switch (group) {
        case Group::data: return {Axis::data};
        case Group::z:
        case Group::z_prefetch: return {Axis::z};
        case Group::y: return {Axis::y};
        case Group::x: return {Axis::x};
        case Group::xy_plane: return {Axis::x, Axis::y};
        case Group::tensor: return {Axis::x, Axis::y, Axis::z};
        case Group::world: return {Axis::x, Axis::y, Axis::z, Axis::data};
    }
    return {};
}

// Rank distance between neighbours of the group (the product of the sizes of the axes laid out faster than its
// fastest axis), and the span of ranks it covers.
struct Placement {
    std::int64_t stride;
    std::int64_t span;
    int size;
};

Placement place(Group group, GridShape const& grid, std::array<Axis, 4> const& order) {
    std::vector<Axis> const axes = group_axes(group);
    std::int64_t stride = 1, span = 1, running = 1;
    int size = 1;
    bool first = true;
    for (Axis axis : order) {
        bool const member = std::find(axes.begin(), axes.end(), axis) != axes.end();
        if (member) {
            if (first) stride = running;
            first = false;
            size *= grid.size(axis);
            span = running * grid.size(axis);
        }
        running *= grid.size(axis);
    }
    return {stride, span, size};
}

double gemm_seconds(double m, double n, double k, double count, MachineProfile const& machine, bool bf16) {
    double const peak = bf16 ? machine.peak_flops_bf16 : machine.peak_flops_fp32;
    double const smallest = std::min({m, n, k});
    double const efficiency = machine.gemm_efficiency * smallest / (smallest + machine.gemm_half_size);
    return count * 2.0 * m * n * k / (peak * efficiency);
}

struct ComputeTimes {
    double forward = 0, backward = 0, dw_gemms = 0, gemm = 0, other = 0;
};

ComputeTimes compute_times(StepShape const& step, MachineProfile const& machine, bool bf16) {
    GridShape const& g = step.grid;
    double const L = step.model.n_layer, C = step.model.n_embd, T = step.seq;
    double const Cx = C / g.x, Cy = C / g.y, Vpy = step.model.padded_vocab_size() / g.y;
    double const heads = step.model.n_head / g.y, hs = C / step.model.n_head, B = step.local_batch();
    double const M = B * T, passes = step.micro_batches();
    // Forward GEMMs of one pass: the four Linear layers per layer, attention per (sequence, head), the LM head.
    double const linears = gemm_seconds(M, 3 * Cy, Cx, L, machine, bf16) + gemm_seconds(M, Cx, Cy, L, machine, bf16) +
                           gemm_seconds(M, 4 * Cy, Cx, L, machine, bf16) + gemm_seconds(M, Cx, 4 * Cy, L, machine, bf16) +
                           gemm_seconds(M, Vpy, Cx, 1, machine, bf16);
    double const attention = 2 * gemm_seconds(T, T, hs, L * B * heads, machine, bf16);
    // Memory-bound kernels of one pass, forward (bytes read and written, fp32): LayerNorms, residuals, GELU,
    // the attention softmax, the embedding and the cross-entropy over this rank's vocabulary slice.
    double const elementwise_bytes = 4.0 * (L * (2 * 2 * M * Cx + 2 * 3 * M * Cx + 2 * M * 4 * Cy + 3 * B * heads * T * T) +
                                            2 * M * Cx + 3 * M * Vpy);
    double const elementwise = elementwise_bytes / machine.memory_bandwidth;
    // The backward does twice the forward's GEMM work (dX and dW) and about twice its memory traffic.
    ComputeTimes times;
    times.forward = passes * (linears + attention + elementwise);
    times.dw_gemms = passes * linears;
    times.backward = passes * (2 * linears + 2 * attention + 2 * elementwise);
    times.gemm = passes * 3 * (linears + attention);
    // AdamW reads and writes 28 bytes per local parameter; the norm reads the gradients once more.
    ShardLayout const layout(step.model, GridPosition{g});
    double const optimizer = 32.0 * static_cast<double>(layout.total()) / machine.memory_bandwidth;
    times.other = passes * 3 * elementwise + optimizer;
    return times;
}

}  // namespace

double collective_seconds(PredictedCollective const& collective, GridShape const& grid,
                          std::array<Axis, 4> const& order, MachineProfile const& machine) {
    Placement const where = place(collective.group, grid, order);
    int const p = where.size;
    if (p <= 1 || collective.calls == 0) return 0;
    bool const inside_node = where.span <= machine.devices_per_node;
    double bandwidth, latency;
    if (inside_node) {
        auto const measured = machine.allreduce_bus_bandwidth.find(p);
        bandwidth = measured != machine.allreduce_bus_bandwidth.end() ? measured->second : machine.intra_node_bandwidth;
        latency = machine.intra_node_latency;
    } else {
        // The node's cards are shared by every group of this axis that leaves the node at the same time.
        double const sharing = static_cast<double>(std::min<std::int64_t>(where.stride, machine.devices_per_node));
        bandwidth = machine.nics_per_node * machine.nic_bandwidth / sharing;
        latency = machine.inter_node_latency;
    }
    if (machine.shared_link_bandwidth > 0) {
        bandwidth = std::min(bandwidth, machine.shared_link_bandwidth / grid.product());
    }
    double const bytes = static_cast<double>(collective.bytes) / static_cast<double>(collective.calls);
    double const steps = p - 1.0, fraction = (p - 1.0) / p;
    double one;
    if (collective.op == "all_gather" || collective.op == "reduce_scatter") {
        one = fraction * bytes / bandwidth + steps * latency;
    } else {
        double const ring = 2 * fraction * bytes / bandwidth + 2 * steps * latency;
        double const tree = 2 * std::ceil(std::log2(p)) * (latency + bytes / bandwidth);
        one = std::min(ring, tree);
    }
    return one * static_cast<double>(collective.calls);
}

TimePrediction predict_step_time(StepShape const& step, MachineProfile const& machine, TimeOptions const& options) {
    ComputeTimes const compute = compute_times(step, machine, options.bf16);
    TimePrediction prediction;
    prediction.gemm_s = compute.gemm;
    prediction.other_compute_s = compute.other;

    std::map<Overlap, std::map<Group, double>> by_class;
    for (auto const& collective : predict_step_traffic(step)) {
        double const seconds = collective_seconds(collective, step.grid, options.order, machine);
        prediction.comm_s += seconds;
        by_class[step.run.overlap ? collective.overlap : Overlap::none][collective.group] += seconds;
    }
    // Hide what each class may hide behind, in order: dX all-reduces behind the dW GEMMs, then reduce-scatters and
    // prefetched all-gathers behind whatever computation is left.
    double dw_capacity = compute.dw_gemms;
    double other_capacity = compute.forward + compute.backward - compute.dw_gemms;
    for (Overlap kind : {Overlap::dw_gemm, Overlap::rest_of_backward, Overlap::previous_linear, Overlap::none}) {
        double total = 0;
        for (auto const& [group, seconds] : by_class[kind]) total += seconds;
        double hidden = 0;
        if (kind == Overlap::dw_gemm) {
            hidden = std::min(total, dw_capacity);
            dw_capacity -= hidden;
            other_capacity += dw_capacity;
        } else if (kind != Overlap::none) {
            hidden = std::min(total, other_capacity);
            other_capacity -= hidden;
        }
        double const exposed_fraction = total > 0 ? (total - hidden) / total : 0;
        for (auto const& [group, seconds] : by_class[kind]) {
            prediction.exposed_by_group[group] += seconds * exposed_fraction;
            prediction.exposed_comm_s += seconds * exposed_fraction;
        }
    }
    prediction.time_s = prediction.gemm_s + prediction.other_compute_s + prediction.exposed_comm_s;
    return prediction;
}

}  // namespace axonn
