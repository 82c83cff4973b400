// `axonn calibrate`: measures this machine and writes the machine profile that `axonn plan` and the time model read.
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/utf8.h"
#include "axonn/perf/calibrate.h"
#include "axonn/train/grid_choice.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <memory>

namespace axonn {
namespace {

void print_summary(MachineProfile const& profile, std::filesystem::path const& out) {
    fmt::print("{}: {}\n", profile.name, profile.description);
    fmt::print("  fp32 GEMM   {:.1f} GFLOP/s per device; transformer shapes reach {:.0f}% of it, half that at a "
               "smallest side of {:.0f}\n",
               profile.peak_flops_fp32 / 1e9, 100 * profile.gemm_efficiency, profile.gemm_half_size);
    fmt::print("  bf16 GEMM   {:.1f} GFLOP/s per device\n", profile.peak_flops_bf16 / 1e9);
    fmt::print("  memory      {:.1f} GB/s copy (read + write), {:.1f} GiB per device\n", profile.memory_bandwidth / 1e9,
               profile.memory_bytes / (1 << 30));
    for (auto const& [group_size, bandwidth] : profile.allreduce_bus_bandwidth) {
        fmt::print("  all-reduce  {} ranks: {:.3f} GB/s bus bandwidth\n", group_size, bandwidth / 1e9);
    }
    fmt::print("  in a node   {:.3f} GB/s, {:.1f} us per message step\n", profile.intra_node_bandwidth / 1e9,
               profile.intra_node_latency * 1e6);
    if (profile.node_bandwidth > 0) {
        fmt::print("  between     {:.3f} GB/s injected per node, {:.1f} us per message step\n",
                   profile.node_bandwidth / 1e9, profile.inter_node_latency * 1e6);
    }
    if (profile.overlapped_compute_slowdown > 0) {
        fmt::print("  overlap     GEMMs {:.0f}% slower while an all-reduce is in flight\n",
                   100 * profile.overlapped_compute_slowdown);
    }
    fmt::print("wrote {}\n", out.string());
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
    CLI::App* command =
        app.add_subcommand("calibrate", "Measure this machine (GEMM rates, memory, all-reduce) and write its profile");
    command->footer(
        "Writes a machine profile for the performance model (TOML, like configs/machines/perlmutter.toml). A device\n"
        "is one MPI rank on one core; a node is a host (OpenMPI's, by name). Rank 0 measures, on one thread, while\n"
        "the other ranks sleep:\n"
        "  GEMM efficiency  SGEMMs of GPT-2-like shapes [M,768]x[768,2304], M = 8..2048, fitted as E*d/(d+h) with\n"
        "                   d the smallest side: gemm_efficiency = E, gemm_half_size = h\n"
        "  fp32 peak        the best single-core SGEMM rate: of 512^3, 1024^3 and 2048^3 (as for MFU), or of those\n"
        "                   shapes\n"
        "  bf16 GEMM        oneDNN's bf16 matmul (fp32 output), the best of 512^3, 1024^3 and 2048^3 (as for MFU);\n"
        "                   where the CPU lacks avx512_bf16 or oneDNN refuses, the fp32 rate is recorded and the\n"
        "                   description says so\n"
        "  memory           one core's memcpy of a buffer far beyond the caches, read + write bytes per second\n"
        "Under mpirun with 2 or more ranks, the first p = 2, 4, ... ranks of the first node up to all of it\n"
        "all-reduce 64 KiB to 16 MiB (4 MiB with --quick) through the communication layer: bus bandwidth\n"
        "2(p-1)/p * bytes / time at the largest message per group; intra_node_bandwidth is the whole node's; the\n"
        "latency per step is half a 4-byte all-reduce of two ranks. With several nodes (scripts/slow-network\n"
        "--nodes makes several on one machine), the ranks of equal rank in their node all-reduce across nodes at\n"
        "once: node_bandwidth and inter_node_latency. With one, nic_bandwidth and inter_node_latency repeat the\n"
        "node's numbers, and shared_link_bandwidth is what pairs of ranks all at once get (a link every rank\n"
        "shares, such as a rate-limited loopback, splits among them). Last, every rank times SGEMMs alone and\n"
        "under a non-blocking all-reduce of all ranks: overlapped_compute_slowdown, how much slower computation\n"
        "runs beside communication. Alone (no mpirun), the network numbers are stand-ins and the notes say so.\n"
        "A run takes seconds over shared memory and up to a minute over a slow link; --quick (fewer shapes, sizes\n"
        "and repetitions) stays under 10 s. Rank 0 writes --out.\n"
        "Examples:\n"
        "  mpirun -np 2 build/axonn calibrate --out configs/machines/local.toml\n"
        "  scripts/slow-network --rate 1gbit -- mpirun -np 2 build/axonn calibrate --quick --out /tmp/slow.toml");
    auto options = std::make_shared<CalibrateOptions>();
    auto out = std::make_shared<std::string>();
    command->add_option("--out", *out, "the profile to write, such as configs/machines/local.toml")->required();
    command->add_option("--name", options->name, "the profile's name")->capture_default_str();
    command->add_flag("--quick", options->quick, "fewer shapes, message sizes and repetitions: under 10 s");
    auto overwrite = std::make_shared<bool>(false);
    command->add_flag("--overwrite", *overwrite,
                      "replace the file at --out, whatever it holds (but a model or data)");

    command->callback([command, options, out, overwrite] {
        std::filesystem::path const path = *out;
        // Checked before the measurements, which take a while, rather than when the file is written. The name
        // heads `axonn plan`'s tables: one line of printable text.
        bool const printable = std::all_of(options->name.begin(), options->name.end(),
                                           [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7F; });
        if (options->name.empty() || !printable) {
            throw UsageError(fmt::format("--name {}: give the profile a name of printable characters",
                                         quoted_text(options->name)));
        }
        require_existing_folder(path, "--out");
        require_apart_from_models_and_data(path, "--out", TuningFile::machine_profile);  // before the folder's check
        require_not_a_folder(path, "--out", "local.toml");
        require_apart_from_config_files(path, "--out", *command);
        require_output_file(path, "--out", "machine profile", *overwrite, {}, TuningFile::machine_profile);
        MachineProfile const profile = measure_machine_profile(*options);
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank != 0) return;
        write_machine_profile(path, profile, calibration_notes(profile, *options), replaced_only_if(*overwrite));
        print_summary(profile, path);
    });
}

}  // namespace axonn
