// `axonn calibrate`'s measurements: GEMM rates (fp32 peak, efficiency at transformer shapes, bf16), memory
// bandwidth, and all-reduce bandwidth and latency through the communication layer.
#include "axonn/perf/calibrate.h"

#include "axonn/comm/communicator.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/timer.h"
#include "axonn/kernels/backend.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <mpi.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

namespace axonn {
namespace {

// How long a run takes: --quick keeps the whole command under 10 s, over shared memory or a 1 Gbit/s link alike.
struct Plan {
    double seconds_per_timing;                // each compute timing repeats until this much time has passed
    std::vector<std::int64_t> gemm_rows;      // M of the transformer-like GEMMs
    std::vector<std::size_t> message_bytes;   // all-reduce sizes, ascending
    std::size_t bytes_per_message_size;       // all-reduce traffic per size, which sets its repetitions
    std::size_t copy_bytes;                   // the memory-bandwidth buffer, well beyond the caches
    int latency_repetitions;
};

Plan make_plan(bool quick) {
    constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;
    if (quick) return {0.03, {16, 64, 256, 2048}, {64 * KiB, 1 * MiB, 4 * MiB}, 16 * MiB, 64 * MiB, 50};
    return {0.2,      {8, 16, 32, 64, 128, 256, 512, 2048}, {64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB},
            128 * MiB, 256 * MiB, 500};
}


// A device of the profile is one core: every timing runs oneDNN and OpenMP on one thread.
class OneThread {
public:
    OneThread() : threads_(omp_get_max_threads()) { omp_set_num_threads(1); }
    ~OneThread() { omp_set_num_threads(threads_); }
    OneThread(OneThread const&) = delete;
    OneThread& operator=(OneThread const&) = delete;

private:
    int threads_;
};

// The best time of `run` after one untimed call (JIT, first touch, caches): the rate the hardware sustains, which a
// machine shared with other work shows only in its fastest repetitions.
template <typename Run>
double best_seconds(Run&& run, double budget_seconds) {
    run();
    double best = 1e30;
    Stopwatch total;
    for (int repetition = 0; repetition < 3 || total.seconds() < budget_seconds; ++repetition) {
        Stopwatch watch;
        run();
        best = std::min(best, watch.seconds());
    }
    return best;
}

// GPT-2 small's QKV projection, [M, 768] · [2304, 768]ᵀ, with M the tokens a rank holds: the dimension that data
// and depth parallelism shrink.
constexpr std::int64_t shape_k = 768;
constexpr std::int64_t shape_n = 2304;

// A Linear's forward of `m` rows through the backend: out[m, shape_n] = inp[m, shape_k] · weight[shape_n, shape_k]ᵀ.
class ProjectionGemm {
public:
    ProjectionGemm(Backend& backend, std::int64_t m)
        : backend_(backend), m_(m), inp_(m * shape_k, 1.0f), weight_(shape_n * shape_k, 0.5f), out_(m * shape_n) {}
    void operator()() {
        backend_.linear_forward(out_.data(), inp_.data(), WeightView{weight_.data()}, nullptr, m_, shape_k, shape_n);
    }
    double flops() const { return 2.0 * static_cast<double>(m_) * shape_n * shape_k; }

private:
    Backend& backend_;
    std::int64_t m_;
    std::vector<float> inp_, weight_, out_;
};

double sgemm_rate(Backend& backend, std::int64_t m, double budget_seconds) {
    ProjectionGemm gemm(backend, m);
    return gemm.flops() / best_seconds(gemm, budget_seconds);
}

struct ShapeRate {
    double smallest_side;
    double flops_per_s;
};

std::vector<ShapeRate> measure_shape_rates(Backend& backend, Plan const& plan) {
    std::vector<ShapeRate> rates;
    for (std::int64_t const m : plan.gemm_rows) {
        rates.push_back(
            {static_cast<double>(std::min({m, shape_n, shape_k})), sgemm_rate(backend, m, plan.seconds_per_timing)});
    }
    return rates;
}

struct EfficiencyFit {
    double efficiency;  // E: the fraction of peak that a GEMM approaches as it grows
    double half_size;   // h: the smallest side at which it reaches E / 2
};

// Fits efficiency(d) = E · d / (d + h), d the GEMM's smallest side. E is the best efficiency measured, which the
// large shapes reach; with E fixed, 1/efficiency - 1/E = (h/E) · (1/d) is a line through the origin in 1/d, and
// least squares gives h.
EfficiencyFit fit_efficiency(std::vector<ShapeRate> const& rates, double peak_flops) {
    double best = 0;
    for (ShapeRate const& rate : rates) best = std::max(best, rate.flops_per_s / peak_flops);
    double sxx = 0, sxy = 0;
    for (ShapeRate const& rate : rates) {
        double const x = 1 / rate.smallest_side, y = peak_flops / rate.flops_per_s - 1 / best;
        sxx += x * x;
        sxy += x * y;
    }
    // Noise on a shared machine can make small GEMMs look no slower than large ones: h is at least one element.
    return {best, std::max(1.0, best * sxy / sxx)};
}

struct Bf16Rate {
    double flops_per_s;
    std::string how;  // for the profile's description
};

// bf16 inputs, fp32 output, measured as for MFU (gemm_rate.h): on a CPU without a native bf16 GEMM, the emulated
// one a bf16 training step runs there.
Bf16Rate measure_bf16_rate() {
    std::unique_ptr<Backend> const bf16 = make_backend("cpu", DType::bf16);
    GemmRateMeasurement const rate = bf16->measure_gemm_rate();
    return {rate.flops_per_s, "bf16 GEMM: " + rate.hardware};
}

// Read plus write bytes per second of one core's memcpy (STREAM's copy convention).
double measure_copy_bandwidth(Plan const& plan) {
    std::vector<char> from(plan.copy_bytes, 1), to(plan.copy_bytes, 0);
    double const seconds =
        best_seconds([&] { std::memcpy(to.data(), from.data(), plan.copy_bytes); }, plan.seconds_per_timing);
    [[maybe_unused]] volatile char const last = to.back();  // the copy is used, so it cannot be optimised away
    return 2.0 * static_cast<double>(plan.copy_bytes) / seconds;
}

// The numbers of one device: rank 0 measures them alone, on one core.
void measure_compute(MachineProfile& profile, Plan const& plan, int nodes, Backend& backend) {
    GemmRateMeasurement const fp32 = backend.measure_gemm_rate();
    OneThread const one_thread;
    std::vector<ShapeRate> const shape_rates = measure_shape_rates(backend, plan);
    // The peak is the best rate any fp32 GEMM reached: on a shared machine the few square repetitions can land
    // below the transformer shapes, which would put the efficiency above one.
    double peak = fp32.flops_per_s;
    for (ShapeRate const& rate : shape_rates) peak = std::max(peak, rate.flops_per_s);
    EfficiencyFit const fit = fit_efficiency(shape_rates, peak);
    Bf16Rate const bf16 = measure_bf16_rate();
    profile.peak_flops_fp32 = peak;
    profile.peak_flops_bf16 = bf16.flops_per_s;
    profile.gemm_efficiency = fit.efficiency;
    profile.gemm_half_size = fit.half_size;
    profile.memory_bandwidth = measure_copy_bandwidth(plan);
    profile.description = fmt::format("{}: {} MPI rank{} of one core each, {} ({} hardware threads); {}",
                                      nodes == 1 ? "this machine as one node" : fmt::format("{} nodes", nodes),
                                      profile.devices_per_node, profile.devices_per_node == 1 ? "" : "s", fp32.hardware,
                                      std::thread::hardware_concurrency(), bf16.how);
}

double memory_per_device(int devices) {
    return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / devices;
}

// 2, 4, 8, ... up to the world size, and the world size itself when it is not a power of two.
std::vector<int> group_sizes(int world) {
    std::vector<int> sizes;
    for (int size = 2; size <= world; size *= 2) sizes.push_back(size);
    if (world > 1 && sizes.back() != world) sizes.push_back(world);
    return sizes;
}

// Seconds per all-reduce of `count` floats. Back-to-back all-reduces synchronise the group, so after one untimed
// call rank 0's clock measures the group's time. Zeros keep the sums finite however many times they repeat.
double seconds_per_all_reduce(Communicator& group, std::size_t count, int repetitions) {
    std::vector<float> buffer(count, 0.0f);
    group.all_reduce(buffer.data(), count);
    Stopwatch watch;
    for (int i = 0; i < repetitions; ++i) group.all_reduce(buffer.data(), count);
    return watch.seconds() / repetitions;
}

// NCCL's bus bandwidth: what each rank's link carries in a ring all-reduce, 2(p-1)/p of the payload.
double bus_bandwidth(int group_size, std::size_t bytes, double seconds) {
    return 2.0 * (group_size - 1) / group_size * static_cast<double>(bytes) / seconds;
}

// The same on every rank of the group, as a collective's repetitions must be.
int repetitions_for(std::size_t bytes, Plan const& plan) {
    return static_cast<int>(std::clamp<std::size_t>(plan.bytes_per_message_size / bytes, 3, 200));
}

// Every rank at once, in pairs, with the largest message: on a link that all ranks share (one rate-limited
// loopback) the pairs split its bandwidth, and world · (pair bus bandwidth) is the link's; on separate links each
// pair keeps its own, and the number is large enough never to bind.
void measure_shared_link(MachineProfile& profile, Plan const& plan, Communicator& world) {
    int const rank = world.rank(), size = world.size();
    std::size_t const bytes = plan.message_bytes.back();
    TrafficLog traffic;
    std::unique_ptr<Communicator> const pair = world.split(rank < size - size % 2 ? rank / 2 : -1, rank, Group::data,
                                                           traffic);
    double const pair_bandwidth =
        pair ? bus_bandwidth(2, bytes, seconds_per_all_reduce(*pair, bytes / sizeof(float), repetitions_for(bytes, plan)))
             : 0.0;
    // The slowest pair sets the step; rank 0 keeps the profile.
    double slowest = pair_bandwidth > 0 ? pair_bandwidth : 1e300;
    world.all_reduce_min(&slowest, 1);
    profile.shared_link_bandwidth = slowest * (size - size % 2);
}

// Where this rank sits: its node (OpenMPI's: a host name; scripts/slow-network --nodes makes several on one
// machine), and its rank there.
struct NodePlace {
    int node = 0;       // 0, 1, ...: nodes numbered in the order of their first world rank
    int node_rank = 0;
    int ranks_per_node = 1;
    int nodes = 1;
};

NodePlace node_place(Communicator& world) {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node);
    NodePlace place;
    MPI_Comm_rank(node, &place.node_rank);
    MPI_Comm_size(node, &place.ranks_per_node);
    int leader = world.rank();  // the world rank of the node's first rank
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    // A node's number: how many nodes have a first rank before its own.
    std::vector<int> leaders(static_cast<std::size_t>(world.size()));
    MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::sort(leaders.begin(), leaders.end());
    leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
    place.nodes = static_cast<int>(leaders.size());
    place.node = static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin());
    double sizes[2] = {static_cast<double>(place.ranks_per_node), -static_cast<double>(place.ranks_per_node)};
    world.all_reduce_max(sizes, 2);
    AXONN_REQUIRE(sizes[0] == -sizes[1],
                  "calibrate needs the same number of ranks on every node (here {} to {}): launch "
                  "with as many slots on each",
                  -sizes[1], sizes[0]);
    return place;
}

// One group of the first `size` ranks of the first node at a time, so that the groups do not share the cores or
// the link; the bandwidth is that of the largest message, the regime of gradient buckets and activations. The ranks
// outside wait with barrier_quietly: OpenMPI's blocking barrier spins, and on a machine whose cores the ranks
// share, a rank with nothing to do would slow the ones being timed.
void measure_all_reduce(MachineProfile& profile, Plan const& plan, Communicator& world, NodePlace const& place) {
    TrafficLog traffic;
    for (int const size : group_sizes(place.ranks_per_node)) {
        bool const member = place.node == 0 && place.node_rank < size;
        if (std::unique_ptr<Communicator> const group = world.split(member ? 0 : -1, world.rank(), Group::data, traffic)) {
            for (std::size_t const bytes : plan.message_bytes) {
                double const seconds =
                    seconds_per_all_reduce(*group, bytes / sizeof(float), repetitions_for(bytes, plan));
                profile.allreduce_bus_bandwidth[size] = bus_bandwidth(size, bytes, seconds);
            }
            // The time model counts 2(p - 1) latency steps in a ring all-reduce: a 4-byte all-reduce of two ranks
            // is two of them.
            if (size == 2) profile.intra_node_latency = seconds_per_all_reduce(*group, 1, plan.latency_repetitions) / 2;
        }
        world.barrier_quietly();
    }
    // Ranks of the other nodes measured nothing: the profile is rank 0's.
    if (!profile.allreduce_bus_bandwidth.empty()) {
        profile.intra_node_bandwidth = profile.allreduce_bus_bandwidth.rbegin()->second;
    }
}

// Between nodes: the groups of the ranks with the same rank on every node, all at once, each of one rank per
// node, as the time model's crossing groups of the widest stride are. The node's injection bandwidth is the sum
// of its groups' (the slowest group's, times the ranks of a node); the latency is a 4-byte all-reduce of one such
// group over its 2(nodes - 1) ring steps.
void measure_between_nodes(MachineProfile& profile, Plan const& plan, Communicator& world, NodePlace const& place) {
    TrafficLog traffic;
    std::size_t const bytes = plan.message_bytes.back();
    std::unique_ptr<Communicator> const across = world.split(place.node_rank, place.node, Group::data, traffic);
    double slowest = bus_bandwidth(place.nodes, bytes,
                                   seconds_per_all_reduce(*across, bytes / sizeof(float), repetitions_for(bytes, plan)));
    world.all_reduce_min(&slowest, 1);
    profile.node_bandwidth = slowest * place.ranks_per_node;
    profile.nic_bandwidth = profile.node_bandwidth;
    world.barrier_quietly();
    double latency = 0;
    if (place.node_rank == 0) {
        latency = seconds_per_all_reduce(*across, 1, plan.latency_repetitions) / (2.0 * (place.nodes - 1));
    }
    world.all_reduce_max(&latency, 1);
    profile.inter_node_latency = latency;
}

// How much slower computation runs while a collective is in flight beside it, as in a training step: every rank
// computes at once while its progress thread (comm/progress.h) advances an all-reduce over all ranks (across nodes
// where there are several). The same GEMMs, about a third of the all-reduce's own time, run alone and then under
// the all-reduce; the best of three rounds each. The slowdown is the ranks' mean of (under / alone - 1), at least 0.
// The message grows from the plan's largest until the all-reduce lasts 30 of the GEMMs (at most 64 MiB, which a
// rank holds twice); where even then it lasts fewer than 9, the GEMMs would outlast it and nothing is measured.
void measure_overlapped_slowdown(MachineProfile& profile, Plan const& plan, Communicator& world, Backend& backend) {
    OneThread const one_thread;
    ProjectionGemm gemm(backend, 64);
    world.barrier_quietly();
    double gemm_s = best_seconds(gemm, plan.seconds_per_timing);
    world.all_reduce_max(&gemm_s, 1);
    constexpr std::size_t most_bytes = std::size_t{64} << 20;
    std::size_t bytes = plan.message_bytes.back();
    double all_reduce_s = seconds_per_all_reduce(world, bytes / sizeof(float), 3);
    world.all_reduce_max(&all_reduce_s, 1);
    while (all_reduce_s < 30 * gemm_s && bytes < most_bytes) {
        bytes = std::min(most_bytes, bytes * 4);
        all_reduce_s = seconds_per_all_reduce(world, bytes / sizeof(float), 3);
        world.all_reduce_max(&all_reduce_s, 1);
    }
    if (all_reduce_s < 9 * gemm_s) return;  // the same on every rank: the times are the ranks' maxima
    std::vector<float> message(bytes / sizeof(float), 0.0f);
    int const gemms = static_cast<int>(all_reduce_s / 3 / gemm_s);
    auto const timed_gemms = [&] {
        Stopwatch watch;
        for (int i = 0; i < gemms; ++i) gemm();
        return watch.seconds();
    };
    double alone = 1e30, under = 1e30;
    for (int round = 0; round < 3; ++round) {
        world.barrier_quietly();
        alone = std::min(alone, timed_gemms());
        world.barrier_quietly();
        Collective in_flight = world.start_all_reduce(message.data(), message.size());
        under = std::min(under, timed_gemms());
        in_flight.wait();
    }
    double slowdown = std::max(0.0, under / alone - 1);
    world.all_reduce(&slowdown, 1);
    // A profile holds at most 10 (eleven times slower), which only a machine far more oversubscribed would show.
    profile.overlapped_compute_slowdown = std::min(10.0, slowdown / world.size());
}

// One rank has no partner: the bandwidth of a shared-memory transport is bound by memory copies, and the latency
// falls back to MPI's own cost of a message to itself. The notes say so.
void stand_in_for_all_reduce(MachineProfile& profile, Plan const& plan) {
    profile.intra_node_bandwidth = profile.memory_bandwidth;
    float send = 0, receive = 0;
    Stopwatch watch;
    for (int i = 0; i < plan.latency_repetitions; ++i) {
        MPI_Sendrecv(&send, 1, MPI_FLOAT, 0, 0, &receive, 1, MPI_FLOAT, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    }
    profile.intra_node_latency = watch.seconds() / plan.latency_repetitions;
}

// Timings on a shared machine vary by ±20 %: four significant digits carry all they say, and read well in the file.
double four_digits(double value) { return std::strtod(fmt::format("{:.4g}", value).c_str(), nullptr); }

void round_measurements(MachineProfile& profile) {
    for (double* value : {&profile.peak_flops_fp32, &profile.peak_flops_bf16, &profile.gemm_efficiency,
                          &profile.gemm_half_size, &profile.memory_bytes, &profile.memory_bandwidth,
                          &profile.intra_node_bandwidth, &profile.intra_node_latency,
                          &profile.shared_link_bandwidth, &profile.node_bandwidth, &profile.nic_bandwidth,
                          &profile.inter_node_latency, &profile.overlapped_compute_slowdown}) {
        *value = four_digits(*value);
    }
    for (auto& [group_size, bandwidth] : profile.allreduce_bus_bandwidth) bandwidth = four_digits(bandwidth);
}

}  // namespace

MachineProfile calibrate_machine(CalibrateOptions const& options, Backend& backend, ProcessGrid& everyone) {
    AXONN_INVARIANT(backend.memory() == Memory::host && backend.gemm_dtype() == DType::f32,
                    "calibrate measures a host backend's fp32 GEMM");
    Plan const plan = make_plan(options.quick);
    Communicator& world = everyone.comm(Group::world);
    NodePlace const place = node_place(world);
    MachineProfile profile;
    profile.name = options.name;
    profile.devices_per_node = place.ranks_per_node;
    profile.memory_bytes = memory_per_device(world.size());
    if (world.rank() == 0) measure_compute(profile, plan, place.nodes, backend);
    world.barrier_quietly();
    if (profile.devices_per_node > 1) {
        measure_all_reduce(profile, plan, world, place);
    } else {
        stand_in_for_all_reduce(profile, plan);
    }
    profile.nics_per_node = 1;
    if (place.nodes > 1) {
        measure_between_nodes(profile, plan, world, place);
    } else {
        // No second node: the network between nodes is taken to be the one measured inside this one, and a link
        // that all ranks share (a rate-limited loopback) is measured as such.
        if (world.size() > 1) measure_shared_link(profile, plan, world);
        profile.nic_bandwidth = profile.intra_node_bandwidth;
        profile.inter_node_latency = profile.intra_node_latency;
    }
    if (world.size() > 1) measure_overlapped_slowdown(profile, plan, world, backend);
    round_measurements(profile);
    return profile;
}

std::string calibration_notes(MachineProfile const& profile, CalibrateOptions const& options) {
    bool const several_nodes = profile.node_bandwidth > 0;
    std::string notes = fmt::format(
        "Measured by `axonn calibrate{}` on {:%Y-%m-%d}: {} MPI rank(s) per node{}.\n"
        "A device is one rank on one core. peak_flops_fp32: the best single-core SGEMM rate (oneDNN, 512^3, 1024^3,\n"
        "2048^3 and [M,768]x[768,2304]); gemm_efficiency E and gemm_half_size h: efficiency(d) = E*d/(d+h) fitted to\n"
        "the latter, d = min(M, 768). peak_flops_bf16: the best oneDNN bf16 matmul of 512^3, 1024^3 and 2048^3, or\n"
        "the fp32 rate where there is none (the description says which). memory_bandwidth: one core's memcpy, read +\n"
        "write bytes. memory_bytes: physical memory / ranks.\n",
        options.quick ? " --quick" : "", fmt::localtime(std::time(nullptr)), profile.devices_per_node,
        several_nodes ? " on several nodes (OpenMPI's, by host name)" : ", taken as one node");
    if (profile.devices_per_node == 1 && !several_nodes) {
        return notes + "One rank: no all-reduce was measured. The bandwidths are the memory copy rate and the\n"
                       "latencies an MPI message to self; run under `mpirun -np 2` or more to measure them.";
    }
    notes += "overlapped_compute_slowdown (written where above 0): on every rank at once, [64,768]x[768,2304]\n"
             "SGEMMs timed alone and under a non-blocking all-reduce of all ranks (at most 64 MiB, lasting 9 such\n"
             "GEMMs or more, else not measured); the ranks' mean of under / alone - 1.\n";
    notes += "All-reduce over the first p ranks of the first node, p = 2, 4, ... up to all of it: bus bandwidth\n"
             "2(p-1)/p * bytes / time at the largest message; intra_node_bandwidth is that of the whole node;\n"
             "intra_node_latency is half the time of a 4-byte all-reduce of two ranks (two ring steps).\n";
    if (several_nodes) {
        return notes + "Between nodes: the groups of the ranks of equal node rank, one rank per node, all-reduce at\n"
                       "once; node_bandwidth (= nic_bandwidth, nics_per_node 1) is the slowest group's bus bandwidth\n"
                       "times the ranks of a node; inter_node_latency a 4-byte all-reduce of one group over its ring\n"
                       "steps.";
    }
    return notes + "This machine has no second node: nic_bandwidth and inter_node_latency repeat the intra-node\n"
                   "numbers, and nics_per_node is 1.";
}

}  // namespace axonn
