// A machine, as the performance model sees it: devices per node, their speed and memory, and the network inside
// and between nodes. Profiles are TOML files in configs/machines/ (perlmutter, frontier, alps from public
// specifications, each number's source noted beside it; local measured here by `axonn calibrate`).
#pragma once

#include "axonn/core/file_io.h"

#include <filesystem>
#include <map>
#include <string>

namespace axonn {

struct MachineProfile {
    std::string name;
    std::string description;
    int devices_per_node = 1;
    double peak_flops_fp32 = 0;      // per device, FLOP/s
    double peak_flops_bf16 = 0;      // per device, FLOP/s (dense, no sparsity)
    double gemm_efficiency = 0.8;    // fraction of peak a large GEMM achieves
    double gemm_half_size = 256;     // smallest GEMM dimension at which half of gemm_efficiency is reached
    double memory_bytes = 0;         // per device
    double memory_bandwidth = 0;     // per device, bytes/s (the model's non-GEMM kernels are bound by it)
    double intra_node_bandwidth = 0; // per device, bytes/s, for a collective inside a node (bus bandwidth)
    double intra_node_latency = 0;   // s per message step
    double nic_bandwidth = 0;        // per network card, bytes/s, one direction
    double inter_node_latency = 0;   // s per message step
    int nics_per_node = 1;
    // Measured all-reduce bus bandwidth by group size (bytes/s), where calibrated; overrides the link numbers
    // for groups inside a node.
    std::map<int, double> allreduce_bus_bandwidth;
    // The same for groups whose consecutive members are `stride` ranks apart inside a node (stride ≥ 2), by stride
    // then group size: such a group crosses slower links (AxoNN measured 50 GB/s for stride-2 pairs and 36 GB/s
    // for stride-4 pairs on Frontier, against 129 GB/s for neighbours).
    std::map<int, std::map<int, double>> strided_bus_bandwidth;
    // Optional (0 = nics_per_node × nic_bandwidth): bytes/s one node actually injects into the network, measured,
    // which every group leaving the node at the same moment shares.
    double node_bandwidth = 0;
    // Optional (0 = none): the groups of a dragonfly network, by nodes (a Cray EX group: 32 switches with up to 16
    // ports to nodes each), and the share of a group's injection bandwidth that its links to other groups carry to
    // one other group. Every group of an axis communicates at once; when the hops of their rings that cross from
    // one network group to the next need more than that share, they slow down (time_model.cpp).
    double network_group_nodes = 0;
    double global_bandwidth_fraction = 0;
    // Optional (0 = none): bytes/s of one link that every rank's traffic crosses at once, such as the one
    // rate-limited loopback of scripts/slow-network. All groups of an axis communicate at the same moment, so each
    // rank then gets this bandwidth divided by the number of ranks, whatever its group, and every collective queues
    // on that one link (time_model.cpp), where otherwise those inside a node and those leaving it queue apart.
    double shared_link_bandwidth = 0;
    // Optional (0 = none): how much slower computation runs while a collective it overlaps is in flight, as a
    // fraction (0.2: a fifth slower). On a GPU, NCCL's kernels take SMs and memory bandwidth from the GEMMs beside
    // them; a CPU rank's progress of MPI takes cycles from its kernels.
    double overlapped_compute_slowdown = 0;
};

// NAME is a profile in configs/machines/ (perlmutter, frontier, alps, local) or a path to a .toml file.
// Throws axonn::Error naming the file and the bad or missing key.
MachineProfile load_machine_profile(std::string const& name_or_path);
// The file NAME stands for, in the machine folder or else among the bundled profiles; an unknown name is an
// axonn::Error that lists the profiles there are.
std::filesystem::path machine_profile_path(std::string const& name_or_path);
// Writes `profile` with `notes` as comments at the top; `existing`: what happens to a file that appeared at `path`
// after it was checked.
void write_machine_profile(std::filesystem::path const& path, MachineProfile const& profile, std::string const& notes,
                           ExistingDestination existing);
std::filesystem::path machine_profile_dir();  // AXONN_SOURCE_DIR/configs/machines, or $AXONN_MACHINES_DIR

}  // namespace axonn
