#include "axonn/perf/time_model.h"

#include "axonn/kernels/attention_plan.h"
#include "axonn/model/decoder_layout.h"
#include "axonn/parallel/linear.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

namespace axonn {
namespace {

using Overlap = PredictedCollective::Overlap;
using Phase = PredictedCollective::Phase;

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

// Whether every group of this placement lies inside one node. The groups of an axis start at multiples of its
// span, so they all fit exactly when the span divides the node; otherwise some straddle a node boundary (a group
// of 3 on nodes of 4: ranks 3, 4, 5), and the collective goes at the pace of those.
bool inside_node(Placement const& where, MachineProfile const& machine) {
    return where.span <= machine.devices_per_node && machine.devices_per_node % where.span == 0;
}

// The bus bandwidth of a group of `size` ranks `stride` apart inside a node: measured for that stride and size
// where the profile has it, else the node's general figure.
double intra_node_bus_bandwidth(MachineProfile const& machine, std::int64_t stride, int size) {
    std::map<int, double> const* measured = nullptr;
    if (stride == 1) {
        measured = &machine.allreduce_bus_bandwidth;
    } else if (auto const table = machine.strided_bus_bandwidth.find(static_cast<int>(stride));
               table != machine.strided_bus_bandwidth.end()) {
        measured = &table->second;
    }
    if (measured != nullptr) {
        if (auto const found = measured->find(size); found != measured->end()) return found->second;
    }
    return machine.intra_node_bandwidth;
}

// The share of its injection rate that a group leaving its node keeps on a dragonfly network. Every group of the
// axis runs its ring at once, one hop per member; the hops leaving a node (`sharing` of them, up to the stride)
// share its cards. A hop crosses into another network group where its two members lie in different ones: of a
// network group's node-leaving hops, stride ÷ (its nodes × sharing) cross (all of them once the stride spans a
// network group), and they all go to the next network group along the rings. Its links to other groups carry
// global_bandwidth_fraction of its injection rate there; crossing hops that need more slow down, and the rings at
// the pace of their slowest hop with them. Groups inside one network group pay nothing.
double network_group_share(Placement const& where, double sharing, MachineProfile const& machine) {
    if (machine.network_group_nodes <= 0) return 1;
    double const ranks_per_group = machine.network_group_nodes * machine.devices_per_node;
    bool const inside = static_cast<double>(where.span) <= ranks_per_group &&
                        std::fmod(ranks_per_group, static_cast<double>(where.span)) == 0;
    if (inside) return 1;
    double const crossing = std::min(1.0, static_cast<double>(where.stride) / (machine.network_group_nodes * sharing));
    return std::min(1.0, machine.global_bandwidth_fraction / crossing);
}

double gemm_seconds(double m, double n, double k, double count, MachineProfile const& machine, bool bf16) {
    double const peak = bf16 ? machine.peak_flops_bf16 : machine.peak_flops_fp32;
    double const smallest = std::min({m, n, k});
    double const efficiency = machine.gemm_efficiency * smallest / (smallest + machine.gemm_half_size);
    return count * 2.0 * m * n * k / (peak * efficiency);
}

// The computation of one phase of a step, and the parts of it that collectives of each overlap class can run
// under.
struct PhaseCompute {
    double gemm = 0, other = 0;
    double chunk_capacity = 0;  // a Linear's later row chunks, forward (and recomputed forward)
    double dw_capacity = 0;     // the dW GEMMs and the later dX chunks, backward
    double total() const { return gemm + other; }
};

// The computation of one step, by phase. The optimizer runs after both: nothing hides behind it.
struct ComputeTimes {
    PhaseCompute forward, backward;
    double optimizer = 0;
    PhaseCompute const& phase(Phase which) const { return which == Phase::forward ? forward : backward; }
    double gemm() const { return forward.gemm + backward.gemm; }
    double other() const { return forward.other + backward.other + optimizer; }
};

ComputeTimes compute_times(StepShape const& step, MachineProfile const& machine, bool bf16) {
    GridShape const& g = step.grid;
    Architecture const model = step.decoder();
    double const L = model.layers, C = model.width, T = step.seq;
    decoder_layout::LocalDims const dims(model, g, step.local_batch(), step.seq);
    double const Cx = C / g.x, Vr = dims.Vr, Vh = dims.Vh;
    double const Uy = static_cast<double>(model.mlp_rows()) / g.y;  // the MLP's first Linear's outputs here
    double const heads = static_cast<double>(model.heads) / g.y, hs = model.head_size(), B = step.local_batch();
    double const M = B * T, passes = step.micro_batches();
    double const forwards = step.run.recompute == Recompute::layer ? 2 : 1;  // recomputation runs a second forward
    double const chunks = linear_row_chunks(static_cast<std::int64_t>(M));
    // One pass's forward GEMMs: the four Linear layers per layer, attention per (sequence, head), the LM head.
    ShardLayout const layout(model.declarations, GridPosition{g});
    double linears = 0;  // out[M, rows] = inp[M, cols] · block[rows, cols]ᵀ, per layer
    for (int id : model.layer_linears()) {
        linears += gemm_seconds(M, static_cast<double>(layout.block_rows(id)), static_cast<double>(layout.block_cols(id)),
                                L, machine, bf16);
    }
    // The LM head, in chunks of rows (DecoderOptions::logit_rows): its dW GEMM's inner dimension is a chunk's rows.
    auto const head_chunks = static_cast<double>(logit_chunks(static_cast<std::int64_t>(M), step.run.logit_rows));
    double const head = gemm_seconds(M / head_chunks, Vr, Vh, head_chunks, machine, bf16);
    // Fused attention, in the precision the backend runs it in (fp32 for short sequences even in mixed precision):
    // two GEMMs per (sequence, head) over the score tiles on and below the diagonal, in the precision's tiles. Its
    // backward runs five (the scores again, dP, dv, dq, dk), 2.5 times the forward where a Linear's backward is
    // twice its forward.
    AttentionPlan const plan = attention_plan(bf16 ? DType::bf16 : DType::f32, step.seq);
    double const query_tile = plan.query_tile;
    double const score_columns = static_cast<double>(plan.scores_computed) / query_tile;
    double const attention = 2 * gemm_seconds(query_tile, score_columns, hs, L * B * heads, machine, plan.in_bf16);
    // One pass's memory-bound kernels, forward (bytes read and written, fp32): norms, residuals, the MLP's
    // activation (reading its Uy inputs, writing its Fy outputs); the embedding and the cross-entropy over this
    // rank's vocabulary slice, with the vocabulary over X·Y the hidden states [M, C] moved between X column
    // blocks and rows (read and written) twice a pass. Attention's score tiles stay in cache.
    double const Fy = static_cast<double>(model.mlp_width) / g.y;
    double const layer_elementwise =
        4.0 * L * (2 * 2 * M * Cx + 2 * 3 * M * Cx + M * (Uy + Fy)) / machine.memory_bandwidth;
    double const relayouts = dims.vocab_over_x() ? 2 * 2 * M * C : 0;
    double const edge_elementwise = 4.0 * (2 * M * Cx + 3 * M * Vr + relayouts) / machine.memory_bandwidth;
    // A Linear's backward does twice its forward's GEMM work (dX and dW) and about twice its memory traffic. The
    // backward phase holds the recomputed forward (forwards - 1 of them).
    double const recomputed = forwards - 1;
    double const later_chunks = (chunks - 1) / chunks;
    ComputeTimes times;
    times.forward.gemm = passes * (linears + attention + head);
    times.forward.other = passes * (layer_elementwise + edge_elementwise);
    times.forward.chunk_capacity = passes * (linears + head) * later_chunks;
    times.backward.gemm = passes * ((recomputed + 2) * linears + (recomputed + 2.5) * attention + 2 * head);
    times.backward.other = passes * ((recomputed + 2) * layer_elementwise + 2 * edge_elementwise);
    times.backward.chunk_capacity = passes * recomputed * linears * later_chunks;
    times.backward.dw_capacity = passes * (linears + head) * (1 + later_chunks);
    // AdamW reads and writes 28 bytes per local parameter; the norm reads the gradients once more.
    times.optimizer = 32.0 * static_cast<double>(layout.total()) / machine.memory_bandwidth;
    return times;
}

// Which links a collective crosses: a group inside a node only the node's own (NVLink, Infinity Fabric, shared
// memory), a group that leaves it the node's network cards. On a link that every rank shares (a rate-limited
// loopback), everything crosses that one.
enum class Links { node, network };
constexpr std::size_t link_kinds = 2;

Links links_crossed(Placement const& where, MachineProfile const& machine) {
    return inside_node(where, machine) && machine.shared_link_bandwidth <= 0 ? Links::node : Links::network;
}

// The collectives of one phase that queue on the same links, by overlap class and group, in seconds.
using LinkQueue = std::map<Overlap, std::map<Group, double>>;

std::map<Group, double> const& queued(LinkQueue const& queue, Overlap kind) {
    static std::map<Group, double> const none;
    auto const found = queue.find(kind);
    return found == queue.end() ? none : found->second;
}

// What a queue leaves exposed, by group: the collectives the trainer waits for at once (`waited`), and those it
// overlaps that outlast the computation they run under (`overlapped`).
struct QueueExposure {
    std::map<Group, double> waited, overlapped;
    double overlapped_s() const {
        double total = 0;
        for (auto const& [group, seconds] : overlapped) total += seconds;
        return total;
    }
};

// In its phase, each class of a queue hides behind the computation it runs under, as the trainer issues it:
// forward all-reduce chunks under their Linear's later chunks, dX all-reduce chunks under the later chunks and the
// dW GEMM; what those leave unused, and the rest of the phase's computation, hides the reduce-scatters, the
// gradient sync and the weight prefetches. The statistics, the loss, the embedding, and the sync of the tensors
// the backward finishes last stay exposed.
// Computation runs `slowdown` slower while a collective is in flight beside it (MachineProfile::
// overlapped_compute_slowdown): C seconds of it hide C·(1 + slowdown) seconds of communication, and each second
// hidden still costs the phase slowdown / (1 + slowdown) seconds, the computation it held back.
QueueExposure hide_behind(PhaseCompute const& capacity, LinkQueue const& queue, double slowdown) {
    QueueExposure exposure;
    double const stretch = 1 + slowdown;
    double other_capacity = (capacity.total() - capacity.chunk_capacity - capacity.dw_capacity) * stretch;
    auto hide = [&](Overlap kind, double own_capacity) {
        double total = 0;
        for (auto const& [group, seconds] : queued(queue, kind)) total += seconds;
        double const hidden_own = std::min(total, own_capacity * stretch);
        other_capacity += own_capacity * stretch - hidden_own;
        double const hidden = hidden_own + std::min(total - hidden_own, kind == Overlap::none ? 0.0 : other_capacity);
        if (kind != Overlap::none) other_capacity -= hidden - hidden_own;
        double const exposed_fraction = total > 0 ? (total - hidden / stretch) / total : 0;
        auto& into = kind == Overlap::none ? exposure.waited : exposure.overlapped;
        for (auto const& [group, seconds] : queued(queue, kind)) into[group] += seconds * exposed_fraction;
    };
    hide(Overlap::later_chunks, capacity.chunk_capacity);
    hide(Overlap::dw_gemm, capacity.dw_capacity);
    hide(Overlap::rest_of_backward, 0);
    hide(Overlap::previous_linear, 0);
    hide(Overlap::none, 0);
    return exposure;
}

}  // namespace

double collective_seconds(PredictedCollective const& collective, GridShape const& grid,
                          std::array<Axis, 4> const& order, MachineProfile const& machine) {
    Placement const where = place(collective.group, grid, order);
    int const p = where.size;
    if (p <= 1 || collective.calls == 0) return 0;
    double bandwidth, latency;
    if (inside_node(where, machine)) {
        bandwidth = intra_node_bus_bandwidth(machine, where.stride, p);
        latency = machine.intra_node_latency;
    } else {
        // The node's injection bandwidth is shared by every group of this axis that leaves the node at the same
        // time: one per rank of the node, up to the stride. Other axes' collectives in flight meanwhile queue on
        // the same cards: their times add up in predict_step_time.
        double const node = machine.node_bandwidth > 0 ? machine.node_bandwidth
                                                       : machine.nics_per_node * machine.nic_bandwidth;
        double const sharing = static_cast<double>(std::min<std::int64_t>(where.stride, machine.devices_per_node));
        bandwidth = node / sharing * network_group_share(where, sharing, machine);
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
    ComputeTimes const compute = compute_times(step, machine, step.run.precision == DType::bf16);
    TimePrediction prediction;
    prediction.gemm_s = compute.gemm();
    prediction.other_compute_s = compute.other();
    prediction.forward_compute_s = compute.forward.total();
    prediction.backward_compute_s = compute.backward.total();

    // Collectives in flight together on the same links share them: their times add up, as if they queued on those
    // links, and hiding them (below) hides their sum. Those inside a node and those leaving it queue apart.
    std::map<Phase, std::array<LinkQueue, link_kinds>> queues;  // by Links
    for (auto const& collective : predict_step_traffic(step)) {
        double const seconds = collective_seconds(collective, step.grid, options.order, machine);
        prediction.comm_s += seconds;
        prediction.comm_by_group[collective.group] += seconds;
        Placement const where = place(collective.group, step.grid, options.order);
        if (collective.calls > 0) {
            bool const per_rank = collective.op == "all_gather" || collective.op == "reduce_scatter";
            std::uint64_t const slices = per_rank ? static_cast<std::uint64_t>(where.size) : 1;
            prediction.largest_call_bytes =
                std::max(prediction.largest_call_bytes, collective.bytes / collective.calls / slices);
        }
        Overlap const overlap = step.run.overlap ? collective.overlap : Overlap::none;
        auto const links = static_cast<std::size_t>(links_crossed(where, machine));
        queues[collective.phase][links][overlap][collective.group] += seconds;
    }
    // The two queues of a phase run side by side under its computation: the phase waits for the one that outlasts
    // it more, and for every collective waited for at once. By group, the other queue's overlapped collectives
    // count as hidden: they finish while the phase waits for the slower queue.
    auto expose = [&](std::map<Group, double> const& groups) {
        for (auto const& [group, seconds] : groups) {
            prediction.exposed_by_group[group] += seconds;
            prediction.exposed_comm_s += seconds;
        }
    };
    // Each queue's slowing of the computation is charged on its own, as if the other's collectives ran while it
    // ran: the slower queue's charge is the phase's.
    double const slowdown = machine.overlapped_compute_slowdown;
    for (auto const& [phase, by_links] : queues) {
        QueueExposure const node =
            hide_behind(compute.phase(phase), by_links[static_cast<std::size_t>(Links::node)], slowdown);
        QueueExposure const network =
            hide_behind(compute.phase(phase), by_links[static_cast<std::size_t>(Links::network)], slowdown);
        expose(node.waited);
        expose(network.waited);
        expose(node.overlapped_s() > network.overlapped_s() ? node.overlapped : network.overlapped);
    }
    prediction.time_s = prediction.gemm_s + prediction.other_compute_s + prediction.exposed_comm_s;
    return prediction;
}

}  // namespace axonn
