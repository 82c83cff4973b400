// The time model's pieces against numbers worked out by hand, and the planner's choices on a made-up machine
// whose numbers make the right answer obvious.
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/perf/planner.h"
#include "axonn/perf/weak_scaling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace axonn {
namespace {

// 4 devices per node; intra-node links 100 GB/s, 1 µs; 4 cards of 25 GB/s, 10 µs between nodes.
MachineProfile toy_machine() {
    MachineProfile machine;
    machine.name = "toy";
    machine.devices_per_node = 4;
    machine.peak_flops_fp32 = 1e13;
    machine.peak_flops_bf16 = 1e14;
    machine.gemm_efficiency = 0.8;
    machine.gemm_half_size = 128;
    machine.memory_bytes = 40e9;
    machine.memory_bandwidth = 1e12;
    machine.intra_node_bandwidth = 100e9;
    machine.intra_node_latency = 1e-6;
    machine.nic_bandwidth = 25e9;
    machine.inter_node_latency = 10e-6;
    machine.nics_per_node = 4;
    return machine;
}

constexpr std::array<Axis, 4> default_order = {Axis::x, Axis::y, Axis::z, Axis::data};

TEST(TimeModel, RingAllReduceInsideANode) {
    // x = 4 is the fastest axis: one node. Ring: 2·(p−1)/p·bytes/bandwidth + 2·(p−1)·latency.
    PredictedCollective const all_reduce{"all_reduce", Group::x, 1, 1'000'000'000};
    double const seconds = collective_seconds(all_reduce, GridShape{.z = 16, .x = 4}, default_order, toy_machine());
    EXPECT_NEAR(seconds, 2 * 0.75 * 1e9 / 100e9 + 6 * 1e-6, 1e-12);
}

TEST(TimeModel, AcrossNodesTheCardsAreShared) {
    // z has stride 4 (= devices per node): each node's 4 cards carry 4 z groups at once, 25 GB/s each.
    PredictedCollective const gather{"all_gather", Group::z, 2, 2'000'000'000};
    double const seconds = collective_seconds(gather, GridShape{.z = 16, .x = 4}, default_order, toy_machine());
    EXPECT_NEAR(seconds, 2 * (15.0 / 16 * 1e9 / (4 * 25e9 / 4) + 15 * 10e-6), 1e-12);
    // The same group as the fastest axis crosses nodes alone: all four cards, 100 GB/s.
    double const alone = collective_seconds(gather, GridShape{.z = 16}, {Axis::z, Axis::x, Axis::y, Axis::data},
                                            toy_machine());
    EXPECT_NEAR(alone, 2 * (15.0 / 16 * 1e9 / 100e9 + 15 * 10e-6), 1e-12);
}

TEST(TimeModel, ASharedLinkIsSplitAmongAllRanks) {
    // One rate-limited loopback for 4 ranks: every x pair all-reduces at once, each rank gets a quarter of it.
    MachineProfile machine = toy_machine();
    machine.shared_link_bandwidth = 4e9;
    PredictedCollective const all_reduce{"all_reduce", Group::x, 1, 1'000'000'000};
    double const seconds = collective_seconds(all_reduce, GridShape{.data = 2, .x = 2}, default_order, machine);
    EXPECT_NEAR(seconds, 2 * 0.5 * 1e9 / (4e9 / 4) + 2 * 1e-6, 1e-12);
}

TEST(TimeModel, AGroupThatStraddlesANodeBoundaryCrossesNodes) {
    // x = 3 on nodes of 4: the groups {0,1,2} fit, {3,4,5} straddle the boundary, and the collective goes at the
    // straddling groups' pace: the node's four cards (stride 1: one group per node crosses), 10 µs steps.
    PredictedCollective const all_reduce{"all_reduce", Group::x, 1, 1'000'000'000};
    double const seconds = collective_seconds(all_reduce, GridShape{.z = 4, .x = 3}, default_order, toy_machine());
    EXPECT_NEAR(seconds, 2 * (2.0 / 3) * 1e9 / 100e9 + 4 * 10e-6, 1e-12);
    // x = 2 divides the node: inside, at the intra-node figure.
    double const inside = collective_seconds(all_reduce, GridShape{.z = 4, .x = 2}, default_order, toy_machine());
    EXPECT_NEAR(inside, 2 * 0.5 * 1e9 / 100e9 + 2 * 1e-6, 1e-12);
}

TEST(TimeModel, InsideANodeTheBandwidthOfTheGroupsStrideIsUsed) {
    // y's pairs are 2 ranks apart (x = 2 runs faster): the profile's stride-2 figure, not the neighbours'.
    MachineProfile machine = toy_machine();
    machine.allreduce_bus_bandwidth = {{2, 129e9}};
    machine.strided_bus_bandwidth = {{2, {{2, 50e9}}}};
    PredictedCollective const all_reduce{"all_reduce", Group::y, 1, 1'000'000'000};
    double const strided = collective_seconds(all_reduce, GridShape{.y = 2, .x = 2}, default_order, machine);
    EXPECT_NEAR(strided, 2 * 0.5 * 1e9 / 50e9 + 2 * 1e-6, 1e-12);
    PredictedCollective const neighbours{"all_reduce", Group::x, 1, 1'000'000'000};
    double const x = collective_seconds(neighbours, GridShape{.y = 2, .x = 2}, default_order, machine);
    EXPECT_NEAR(x, 2 * 0.5 * 1e9 / 129e9 + 2 * 1e-6, 1e-12);
}

TEST(TimeModel, GroupsLeavingANodeShareItsMeasuredInjectionBandwidth) {
    // The node injects 80 GB/s, measured, not its cards' 100. z (stride 4) leaves the node as 4 groups per node,
    // 20 GB/s each; data (stride 8) too. In flight together, their times add up: they queue on the same cards.
    MachineProfile machine = toy_machine();
    machine.node_bandwidth = 80e9;
    PredictedCollective const gather{"all_gather", Group::z, 1, 1'000'000'000};
    GridShape const grid{.data = 2, .z = 2, .x = 4};
    EXPECT_NEAR(collective_seconds(gather, grid, default_order, machine), 0.5 * 1e9 / (80e9 / 4) + 10e-6, 1e-12);
    PredictedCollective const sum{"all_reduce", Group::data, 1, 1'000'000'000};
    EXPECT_NEAR(collective_seconds(sum, grid, default_order, machine), 2 * 0.5 * 1e9 / (80e9 / 4) + 2 * 10e-6, 1e-12);
}

TEST(TimeModel, RingsBetweenDragonflyGroupsShareTheirGlobalLinks) {
    // Network groups of 2 nodes (8 ranks) whose links to other groups carry half their injection rate. The data
    // axis (stride 8: one network group) crosses into the next group on every hop: 20 GB/s per ring becomes 10.
    MachineProfile machine = toy_machine();
    machine.node_bandwidth = 80e9;
    machine.network_group_nodes = 2;
    machine.global_bandwidth_fraction = 0.5;
    GridShape const grid{.data = 2, .x = 8};
    PredictedCollective const sum{"all_reduce", Group::data, 1, 1'000'000'000};
    EXPECT_NEAR(collective_seconds(sum, grid, default_order, machine), 2 * 0.5 * 1e9 / (80e9 / 4 * 0.5) + 2 * 10e-6,
                1e-12);
    // x (stride 1, 8 ranks) stays inside its network group: it pays nothing (its node-leaving hops at 80 GB/s).
    PredictedCollective const x_sum{"all_reduce", Group::x, 1, 1'000'000'000};
    EXPECT_NEAR(collective_seconds(x_sum, grid, default_order, machine), 2 * (7.0 / 8) * 1e9 / 80e9 + 2 * 7 * 10e-6,
                1e-12);
    // 16 consecutive ranks span two network groups, but of each group's two node-leaving hops only one crosses:
    // half its hops, which the global links carry at half the injection rate, so no ring slows down...
    GridShape const wide{.x = 16};
    double const untapered = 2 * (15.0 / 16) * 1e9 / 80e9 + 2 * 15 * 10e-6;
    EXPECT_NEAR(collective_seconds(x_sum, wide, default_order, machine), untapered, 1e-12);
    // ...while links carrying a quarter of it halve them all.
    machine.global_bandwidth_fraction = 0.25;
    EXPECT_NEAR(collective_seconds(x_sum, wide, default_order, machine), 2 * (15.0 / 16) * 1e9 / 40e9 + 2 * 15 * 10e-6,
                1e-12);
}

TEST(TimeModel, OverlapHidesCommunicationButNeverMoreThanThereIs) {
    StepShape overlapped;
    overlapped.model = gpt_preset("gpt2-medium");
    overlapped.grid = GridShape{.z = 2, .y = 2, .x = 2};
    overlapped.batch = 16;
    overlapped.seq = 1024;
    StepShape blocking = overlapped;
    blocking.run.overlap = false;
    TimePrediction const hidden = predict_step_time(overlapped, toy_machine(), TimeOptions{});
    TimePrediction const exposed = predict_step_time(blocking, toy_machine(), TimeOptions{});
    EXPECT_DOUBLE_EQ(hidden.comm_s, exposed.comm_s);
    EXPECT_NEAR(exposed.exposed_comm_s, exposed.comm_s, 1e-12 * exposed.comm_s);
    EXPECT_LT(hidden.exposed_comm_s, exposed.exposed_comm_s);
    EXPECT_GE(hidden.exposed_comm_s, 0.0);
    EXPECT_LT(hidden.time_s, exposed.time_s);
}

// A collective hides only behind the computation of its own phase: the backward's gradient reduce-scatters and
// re-gathers of weights cannot use the forward's computation, which is over when they are issued. In mixed
// precision on a Z-only grid, the forward gathers each weight in bf16 under a forward's computation, and the
// backward gathers it again and reduce-scatters its fp32 gradient (three times the bytes) under twice that. As the
// network gets slower step by step, the backward's communication outgrows the backward's computation while all
// of the step's communication still fits under all of its computation: there, pooling the step's computation
// would hide everything, and the phases leave at least the backward's excess exposed.
TEST(TimeModel, CommunicationHidesOnlyBehindItsOwnPhase) {
    StepShape step;
    step.model = gpt_preset("gpt2-medium");
    step.grid = GridShape{.z = 8};
    step.batch = 64;
    step.seq = 1024;
    step.run.precision = DType::bf16;
    bool window_seen = false;
    for (double bandwidth = 400e9; bandwidth > 1e9; bandwidth /= 1.05) {
        MachineProfile machine = toy_machine();
        machine.devices_per_node = 8;
        machine.intra_node_bandwidth = bandwidth;
        TimePrediction const time = predict_step_time(step, machine, TimeOptions{});
        double hideable[2] = {0, 0};  // forward, backward
        for (auto const& collective : predict_step_traffic(step)) {
            if (collective.overlap == PredictedCollective::Overlap::none) continue;
            hideable[collective.phase == PredictedCollective::Phase::backward] +=
                collective_seconds(collective, step.grid, default_order, machine);
        }
        double const excess = std::max(0.0, hideable[0] - time.forward_compute_s) +
                              std::max(0.0, hideable[1] - time.backward_compute_s);
        EXPECT_GE(time.exposed_comm_s, excess * (1 - 1e-12)) << bandwidth;
        bool const fits_the_step = hideable[0] + hideable[1] < time.forward_compute_s + time.backward_compute_s;
        if (fits_the_step && excess > 0) {
            window_seen = true;
            EXPECT_GT(time.exposed_comm_s, 0.0);
        }
    }
    EXPECT_TRUE(window_seen) << "no network speed put the backward's communication beyond its computation alone";
}

// gpt2-medium on z = 2 across nodes and x = 4 inside one (the toy machine's nodes of 4).
StepShape step_inside_and_across_nodes() {
    StepShape step;
    step.model = gpt_preset("gpt2-medium");
    step.grid = GridShape{.z = 2, .x = 4};
    step.batch = 16;
    step.seq = 1024;
    return step;
}

// Whether a group of that step lies inside a node: x.
bool inside_a_node(Group group) { return group == Group::x; }

// Collectives inside a node cross the node's own links, those leaving it the network cards: two queues that run
// side by side under the same computation. As the network slows, the step waits at least for the slower queue's
// excess over its phase's computation, and never for more than one queue of everything would leave (the same
// collectives on a link every rank shares, fast enough to cost the same seconds); at some speeds, for less.
TEST(TimeModel, CollectivesInsideANodeAndAcrossNodesQueueApart) {
    StepShape const step = step_inside_and_across_nodes();
    bool window_seen = false;
    for (double bandwidth = 100e9; bandwidth > 1e8; bandwidth /= 1.05) {
        MachineProfile machine = toy_machine();
        machine.nic_bandwidth = bandwidth;
        MachineProfile one_link = machine;
        one_link.shared_link_bandwidth = 1e15;
        TimePrediction const apart = predict_step_time(step, machine, TimeOptions{});
        TimePrediction const together = predict_step_time(step, one_link, TimeOptions{});
        ASSERT_DOUBLE_EQ(apart.comm_s, together.comm_s) << bandwidth;
        double hideable[2][2] = {};  // [forward, backward][across nodes, inside the node]
        for (auto const& collective : predict_step_traffic(step)) {
            if (collective.overlap == PredictedCollective::Overlap::none) continue;
            hideable[collective.phase == PredictedCollective::Phase::backward][inside_a_node(collective.group)] +=
                collective_seconds(collective, step.grid, default_order, machine);
        }
        double const compute[2] = {apart.forward_compute_s, apart.backward_compute_s};
        double slower_excess = 0;
        for (int phase : {0, 1}) {
            slower_excess += std::max({0.0, hideable[phase][0] - compute[phase], hideable[phase][1] - compute[phase]});
        }
        EXPECT_GE(apart.exposed_comm_s, slower_excess * (1 - 1e-12)) << bandwidth;
        EXPECT_LE(apart.exposed_comm_s, together.exposed_comm_s * (1 + 1e-12)) << bandwidth;
        if (apart.exposed_comm_s < together.exposed_comm_s * (1 - 1e-6)) window_seen = true;
    }
    EXPECT_TRUE(window_seen) << "at no network speed did two queues leave less exposed than one";
}

// Seconds of one step's collectives: those waited for at once, and the overlapped ones by phase and links.
struct StepCollectiveSeconds {
    double waited = 0;
    double overlapped[2][2] = {};  // [forward, backward][across nodes, inside the node]
};

StepCollectiveSeconds collective_seconds_of(StepShape const& step, MachineProfile const& machine) {
    StepCollectiveSeconds sum;
    for (auto const& collective : predict_step_traffic(step)) {
        double const seconds = collective_seconds(collective, step.grid, default_order, machine);
        if (collective.overlap == PredictedCollective::Overlap::none) {
            sum.waited += seconds;
        } else {
            sum.overlapped[collective.phase == PredictedCollective::Phase::backward][inside_a_node(collective.group)] +=
                seconds;
        }
    }
    return sum;
}

// With computation too fast to hide anything, each phase waits for every collective waited for at once, and for
// the longer of the two queues of overlapped ones: exactly, by hand, and whether or not the computation slows
// down beside them (there is none left to slow). The exposed time by group adds up to it.
TEST(TimeModel, WithNothingToHideBehindThePhaseWaitsForTheLongerQueue) {
    StepShape const step = step_inside_and_across_nodes();
    MachineProfile machine = toy_machine();
    machine.peak_flops_fp32 = machine.peak_flops_bf16 = machine.memory_bandwidth = 1e30;
    machine.nic_bandwidth = 5e9;
    StepCollectiveSeconds const sum = collective_seconds_of(step, machine);
    auto const& overlapped = sum.overlapped;
    ASSERT_GT(std::min({overlapped[0][0], overlapped[0][1], overlapped[1][0], overlapped[1][1]}), 0.0);
    double const expected = sum.waited + std::max(overlapped[0][0], overlapped[0][1]) +
                            std::max(overlapped[1][0], overlapped[1][1]);
    for (double slowdown : {0.0, 0.5}) {
        machine.overlapped_compute_slowdown = slowdown;
        TimePrediction const time = predict_step_time(step, machine, TimeOptions{});
        EXPECT_NEAR(time.exposed_comm_s, expected, 1e-9 * expected) << slowdown;
        double by_group = 0;
        for (auto const& [group, seconds] : time.exposed_by_group) by_group += seconds;
        EXPECT_NEAR(by_group, time.exposed_comm_s, 1e-12 * time.exposed_comm_s) << slowdown;
    }
}

// Computation that runs 1 + s times slower while collectives it overlaps are in flight: when it hides them all,
// each phase still waits for s / (1 + s) of its longer queue's seconds (the computation held back meanwhile),
// besides the collectives waited for at once; exactly, by hand. Without the slowdown it waits for those alone.
TEST(TimeModel, ComputationSlowedByTheCollectivesItHidesLengthensThePhase) {
    StepShape const step = step_inside_and_across_nodes();
    MachineProfile machine = toy_machine();
    machine.intra_node_bandwidth = 1e12;
    machine.nic_bandwidth = 1e12;
    StepCollectiveSeconds const sum = collective_seconds_of(step, machine);
    auto const& overlapped = sum.overlapped;
    ASSERT_GT(std::min({overlapped[0][0], overlapped[0][1], overlapped[1][0], overlapped[1][1]}), 0.0);
    TimePrediction const steady = predict_step_time(step, machine, TimeOptions{});
    ASSERT_NEAR(steady.exposed_comm_s, sum.waited, 1e-9 * sum.waited) << "the overlapped collectives are not hidden";
    double const slowdown = 0.25;
    machine.overlapped_compute_slowdown = slowdown;
    TimePrediction const slowed = predict_step_time(step, machine, TimeOptions{});
    double const expected = sum.waited + (std::max(overlapped[0][0], overlapped[0][1]) +
                                          std::max(overlapped[1][0], overlapped[1][1])) * slowdown / (1 + slowdown);
    EXPECT_NEAR(slowed.exposed_comm_s, expected, 1e-9 * expected);
    EXPECT_DOUBLE_EQ(slowed.comm_s, steady.comm_s);
    EXPECT_DOUBLE_EQ(slowed.gemm_s + slowed.other_compute_s, steady.gemm_s + steady.other_compute_s);
}

// When the collectives across nodes outlast all of a phase's computation, even slowed, that computation runs
// under them throughout, and the phase waits for their excess over its computation at full speed: the slowdown
// costs nothing more. Exactly, by hand, with and without it.
TEST(TimeModel, CommunicationThatOutlastsTheSlowedComputationLeavesItsExcessExposed) {
    StepShape const step = step_inside_and_across_nodes();
    MachineProfile machine = toy_machine();
    machine.nic_bandwidth = 2e8;
    StepCollectiveSeconds const sum = collective_seconds_of(step, machine);
    auto const& overlapped = sum.overlapped;
    double const slowdown = 0.25;
    for (double const each : {0.0, slowdown}) {
        machine.overlapped_compute_slowdown = each;
        TimePrediction const time = predict_step_time(step, machine, TimeOptions{});
        double const compute[2] = {time.forward_compute_s, time.backward_compute_s};
        double expected = sum.waited;
        for (int phase : {0, 1}) {
            // Across nodes, more than the computation hides even slowed; inside the node, less than its excess.
            ASSERT_GT(overlapped[phase][0], compute[phase] * (1 + slowdown)) << "phase " << phase;
            ASSERT_LT(overlapped[phase][1], overlapped[phase][0] - compute[phase]) << "phase " << phase;
            expected += overlapped[phase][0] - compute[phase];
        }
        EXPECT_NEAR(time.exposed_comm_s, expected, 1e-9 * expected) << each;
    }
}

// The LM head in chunks of rows (--logit-rows) runs as that many GEMMs of a chunk's rows each: on the toy
// machine (half speed at a side of 128), gpt2-small's head at B·T = 2048 rows has 768 as its smallest side whole,
// or in chunks of 1024 rows, and runs at the same speed; in chunks of 64 rows its forward, dX and dW GEMMs run at
// 64 / (64 + 128) of the peak's 0.8 where whole they ran at 768 / (768 + 128).
TEST(TimeModel, TheLmHeadInChunksOfFewRowsRunsSlower) {
    StepShape whole;
    whole.model = gpt_preset("gpt2-small");
    whole.batch = 8;
    whole.seq = 256;
    whole.run.logit_rows = 0;
    StepShape large_chunks = whole, small_chunks = whole;
    large_chunks.run.logit_rows = 1024;
    small_chunks.run.logit_rows = 64;
    double const at_once = predict_step_time(whole, toy_machine(), TimeOptions{}).gemm_s;
    EXPECT_DOUBLE_EQ(predict_step_time(large_chunks, toy_machine(), TimeOptions{}).gemm_s, at_once);
    double const flops = 3 * 2.0 * 2048 * 50304 * 768;  // forward, dX and dW
    double const slower = flops / (1e13 * 0.8 * 64 / 192) - flops / (1e13 * 0.8 * 768 / 896);
    EXPECT_NEAR(predict_step_time(small_chunks, toy_machine(), TimeOptions{}).gemm_s - at_once, slower, 1e-9 * slower);
}

TEST(Planner, ExcludesWhatDoesNotFitAndRanksTheRest) {
    PlanRequest request;
    request.model = gpt_preset("gpt-20b");
    request.devices = 64;
    request.batch = 64;
    request.seq = 2048;
    request.machine = toy_machine();
    request.run.recompute = Recompute::layer;  // as AxoNN's runs: without it no grid of 64 holds 64 × 2048
    std::vector<PlanCandidate> const candidates = plan_grids(request);
    EXPECT_EQ(candidates.size(), grid_factorisations(64).size());
    // Pure data parallelism holds all 20 B parameters (16 bytes each with AdamW) on every device: excluded.
    auto const pure_data = std::find_if(candidates.begin(), candidates.end(),
                                        [](PlanCandidate const& c) { return c.grid == GridShape{.data = 64}; });
    ASSERT_NE(pure_data, candidates.end());
    ASSERT_TRUE(pure_data->excluded.has_value());
    EXPECT_NE(pure_data->excluded->find("GiB per device"), std::string::npos) << *pure_data->excluded;
    ASSERT_FALSE(candidates.front().excluded.has_value());
    for (std::size_t i = 1; i < candidates.size() && !candidates[i].excluded; ++i) {
        EXPECT_LE(candidates[i - 1].time.time_s, candidates[i].time.time_s);
    }
    EXPECT_GT(candidates.front().pct_peak, 0.0);
    EXPECT_LT(candidates.front().pct_peak, 100.0);
}

// Megatron-LM's and AxoNN's hardware FLOPs of GPT-2, worked out by hand for B = 4, s = 32, l = 2, h = 64, V = 320:
// without recomputation 72·Bslh² = 75,497,472 times (1 + 32/384 + 320/1536) = 97,517,568; with it
// 96·Bslh² = 100,663,296 times (1 + 32/384 + 320/2048) = 124,780,544. The difference is one more forward of the
// layers: 24·Bslh²·(1 + s/6h).
TEST(Planner, HardwareFlopsFollowMegatronsFormula) {
    GptConfig config;
    config.n_layer = 2;
    config.n_embd = 64;
    config.n_head = 4;
    config.vocab_size = 320;
    Architecture const model = decoder_architecture(config);
    EXPECT_DOUBLE_EQ(model.hardware_flops_per_step(4, 32, false), 97517568.0);
    EXPECT_DOUBLE_EQ(model.hardware_flops_per_step(4, 32, true), 124780544.0);
    EXPECT_DOUBLE_EQ(model.hardware_flops_per_step(4, 32, true) - model.hardware_flops_per_step(4, 32, false),
                     24.0 * 4 * 32 * 2 * 64 * 64 * (1 + 32.0 / 384));
}

// A layer of width 49,152 has an MLP weight of 4 · 49,152² = 9.7 G elements. Over data = 2, its gradient is summed
// in one all-reduce of more than 2^31 − 1 elements, which the comm layer splits; over x = 2 every collective is an
// activation's, far below the limit.
TEST(Planner, MarksTheGridsWhoseCollectivesExceedOneMpiCall) {
    PlanRequest request;
    request.model = GptConfig{.name = "wide", .vocab_size = 320, .n_layer = 1, .n_head = 64, .n_embd = 49152, .max_seq = 128};
    request.devices = 2;
    request.batch = 2;
    request.seq = 128;
    request.machine = toy_machine();
    std::vector<PlanCandidate> const candidates = plan_grids(request);
    auto const on = [&](GridShape const& grid) {
        return *std::find_if(candidates.begin(), candidates.end(), [&](auto const& c) { return c.grid == grid; });
    };
    PlanCandidate const data = on(GridShape{.data = 2});
    EXPECT_EQ(data.time.largest_call_bytes, std::uint64_t{4} * 49152 * 49152 * 4);
    EXPECT_TRUE(data.split_collectives);
    PlanCandidate const x = on(GridShape{.x = 2});
    EXPECT_LT(x.time.largest_call_bytes, std::uint64_t{1} << 31);
    EXPECT_FALSE(x.split_collectives);
}

// Each grid is planned with the vocabulary layout it would run with: --vocab-split auto takes the one that moves
// fewer bytes over X (resolved_vocab_split): the X·Y plane's rows for a narrow model with GPT-2's vocabulary on
// y = 2, x = 4, and on y = 8 (X not split, where the two are one); a layout named is planned as named.
TEST(Planner, EachGridIsPlannedWithItsVocabularyLayout) {
    PlanRequest request;
    request.model =
        GptConfig{.name = "narrow", .vocab_size = 50257, .n_layer = 1, .n_head = 4, .n_embd = 256, .max_seq = 128};
    request.devices = 8;
    request.batch = 8;
    request.seq = 128;
    request.machine = toy_machine();
    auto const split_on = [](std::vector<PlanCandidate> const& candidates, GridShape const& grid) {
        return std::find_if(candidates.begin(), candidates.end(), [&](auto const& c) { return c.grid == grid; })
            ->vocab_split;
    };
    std::vector<PlanCandidate> const automatic = plan_grids(request);
    EXPECT_EQ(split_on(automatic, GridShape{.y = 2, .x = 4}), VocabSplit::xy);  // 4,096 bytes against 100,608
    EXPECT_EQ(split_on(automatic, GridShape{.y = 8}), VocabSplit::xy);
    request.run.vocab_split = VocabSplit::y;
    EXPECT_EQ(split_on(plan_grids(request), GridShape{.y = 2, .x = 4}), VocabSplit::y);
}

// The plan reports both conventions, each against the same peak and time.
TEST(Planner, ReportsModelAndHardwareFlops) {
    PlanRequest request;
    request.model = gpt_preset("gpt-20b");
    request.devices = 64;
    request.batch = 64;
    request.seq = 2048;
    request.run.recompute = Recompute::layer;
    request.machine = toy_machine();
    PlanCandidate const best = plan_grids(request).front();
    ASSERT_FALSE(best.excluded.has_value()) << *best.excluded;
    double const hardware = request.model.architecture().hardware_flops_per_step(64, 2048, true);
    EXPECT_DOUBLE_EQ(best.hardware_flops_per_s, hardware / best.time.time_s);
    EXPECT_DOUBLE_EQ(best.hardware_pct_peak / best.pct_peak, best.hardware_flops_per_s / best.flops_per_s);
    EXPECT_GT(best.hardware_flops_per_s, best.flops_per_s);  // the recomputed forward counts
}

TEST(Planner, RejectsImpossibleRequests) {
    PlanRequest request;
    request.model = gpt_preset("gpt-5b");
    request.machine = toy_machine();
    request.devices = 0;
    EXPECT_THROW(plan_grids(request), Error);
    request.devices = 8;
    request.seq = 4096;  // longer than the context
    EXPECT_THROW(plan_grids(request), Error);
}

// Weak scaling on the toy machine: gpt2-small on 4 devices, then gpt2-medium on 8 (one node each, so no network),
// the batch doubling with the devices. The medium model's wider GEMMs run nearer the peak, so its throughput per
// device is higher: an efficiency above 1, which the plan must explain by the compute share it names.
TEST(WeakScaling, EfficiencyIsPerDeviceThroughputAgainstTheFirstPointAndSuperLinearSaysWhy) {
    MachineProfile machine = toy_machine();
    machine.devices_per_node = 8;
    std::vector<WeakScalingPoint> points(2);
    for (auto& [point, model, devices, batch] :
         {std::tuple{&points[0], "gpt2-small", 4, 8}, std::tuple{&points[1], "gpt2-medium", 8, 16}}) {
        point->label = model;
        point->request.model = gpt_preset(model);
        point->request.devices = devices;
        point->request.batch = batch;
        point->request.seq = 512;
        point->request.machine = machine;
    }
    plan_weak_scaling(points);
    ASSERT_TRUE(points[0].best && points[1].best);
    EXPECT_DOUBLE_EQ(points[0].efficiency, 1.0);
    double const per_device_0 = points[0].best->hardware_flops_per_s / 4;
    double const per_device_1 = points[1].best->hardware_flops_per_s / 8;
    EXPECT_DOUBLE_EQ(points[1].efficiency, per_device_1 / per_device_0);
    EXPECT_FALSE(super_linear_reason(points[0], points[0]).has_value());
    ASSERT_GT(points[1].efficiency, 1.0);
    EXPECT_GT(points[1].compute_pct_peak, points[0].compute_pct_peak);
    std::optional<std::string> const reason = super_linear_reason(points[0], points[1]);
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("its larger GEMMs run nearer the peak"), std::string::npos) << *reason;
}

}  // namespace
}  // namespace axonn
