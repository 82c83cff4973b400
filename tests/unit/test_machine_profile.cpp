// Machine profiles: the shipped ones load with plausible numbers, a written profile reads back exactly, and each
// kind of bad file fails with one line that names the file and the key.
#include "axonn/core/error.h"
#include "axonn/perf/machine_profile.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

using testing::error_of;

TEST(MachineProfile, ShippedProfilesLoadWithTheirHardware) {
    MachineProfile const perlmutter = load_machine_profile("perlmutter");
    EXPECT_EQ(perlmutter.name, "perlmutter");
    EXPECT_EQ(perlmutter.devices_per_node, 4);
    EXPECT_EQ(perlmutter.memory_bytes, 40e9);
    EXPECT_EQ(perlmutter.peak_flops_bf16, 312e12);
    EXPECT_EQ(perlmutter.nics_per_node, 4);
    EXPECT_EQ(perlmutter.nic_bandwidth, 25e9);
    EXPECT_EQ(perlmutter.allreduce_bus_bandwidth.at(4), 225e9);

    MachineProfile const frontier = load_machine_profile("frontier");
    EXPECT_EQ(frontier.devices_per_node, 8);  // GCDs
    EXPECT_EQ(frontier.memory_bytes, 64e9);
    EXPECT_EQ(frontier.nics_per_node, 4);

    MachineProfile const alps = load_machine_profile("alps");
    EXPECT_EQ(alps.devices_per_node, 4);
    EXPECT_EQ(alps.memory_bytes, 96e9);

    for (MachineProfile const& machine : {perlmutter, frontier, alps}) {
        SCOPED_TRACE(machine.name);
        EXPECT_FALSE(machine.description.empty());
        EXPECT_GT(machine.peak_flops_bf16, machine.peak_flops_fp32);
        EXPECT_GT(machine.gemm_efficiency, 0.5);
        EXPECT_LT(machine.gemm_efficiency, 1.0);
        EXPECT_GT(machine.intra_node_bandwidth, machine.nic_bandwidth);  // links inside a node beat one card
        EXPECT_GT(machine.memory_bandwidth, machine.intra_node_bandwidth);
        EXPECT_GT(machine.intra_node_latency, 1e-7);
        EXPECT_LT(machine.inter_node_latency, 1e-4);
    }
}

TEST(MachineProfile, LoadsAPathAsWellAsAName) {
    fs::path const path = machine_profile_dir() / "frontier.toml";
    EXPECT_EQ(load_machine_profile(path.string()).name, "frontier");
}

TEST(MachineProfile, WrittenProfileReadsBackExactly) {
    testing::TempDir const dir;
    MachineProfile profile;
    profile.name = "local";
    profile.description = "two ranks on one machine, avx512_core_bf16; bf16 GEMM by oneDNN brg:avx512_core_bf16";
    profile.devices_per_node = 10;  // a count that a short scientific form (1e+01) must not be written as
    profile.peak_flops_fp32 = 2.0987654321e11;
    profile.peak_flops_bf16 = 4.1e11;
    profile.gemm_efficiency = 0.9312345;
    profile.gemm_half_size = 37.25;
    profile.memory_bytes = 12884901888;
    profile.memory_bandwidth = 1.9e10;
    profile.intra_node_bandwidth = 3.3e9;
    profile.intra_node_latency = 1.23e-6;
    profile.nic_bandwidth = 3.3e9;
    profile.inter_node_latency = 1.23e-6;
    profile.nics_per_node = 1;
    profile.allreduce_bus_bandwidth = {{2, 5.5e9}, {4, 3.3e9}};
    profile.shared_link_bandwidth = 1.211e8;
    profile.strided_bus_bandwidth = {{2, {{2, 5e10}, {4, 7.2e10}}}, {4, {{2, 3.6e10}}}};
    profile.node_bandwidth = 3.4e10;
    profile.network_group_nodes = 128;
    profile.global_bandwidth_fraction = 0.5;
    profile.overlapped_compute_slowdown = 0.19;
    fs::path const path = dir / "local.toml";
    write_machine_profile(path, profile, "measured here\nby the test", ExistingDestination::keep);

    MachineProfile const read = load_machine_profile(path.string());
    EXPECT_EQ(read.name, profile.name);
    EXPECT_EQ(read.description, profile.description);
    EXPECT_EQ(read.devices_per_node, profile.devices_per_node);
    EXPECT_EQ(read.peak_flops_fp32, profile.peak_flops_fp32);
    EXPECT_EQ(read.peak_flops_bf16, profile.peak_flops_bf16);
    EXPECT_EQ(read.gemm_efficiency, profile.gemm_efficiency);
    EXPECT_EQ(read.gemm_half_size, profile.gemm_half_size);
    EXPECT_EQ(read.memory_bytes, profile.memory_bytes);
    EXPECT_EQ(read.memory_bandwidth, profile.memory_bandwidth);
    EXPECT_EQ(read.intra_node_bandwidth, profile.intra_node_bandwidth);
    EXPECT_EQ(read.intra_node_latency, profile.intra_node_latency);
    EXPECT_EQ(read.nic_bandwidth, profile.nic_bandwidth);
    EXPECT_EQ(read.inter_node_latency, profile.inter_node_latency);
    EXPECT_EQ(read.nics_per_node, profile.nics_per_node);
    EXPECT_EQ(read.allreduce_bus_bandwidth, profile.allreduce_bus_bandwidth);
    EXPECT_EQ(read.shared_link_bandwidth, profile.shared_link_bandwidth);
    EXPECT_EQ(read.strided_bus_bandwidth, profile.strided_bus_bandwidth);
    EXPECT_EQ(read.node_bandwidth, profile.node_bandwidth);
    EXPECT_EQ(read.network_group_nodes, profile.network_group_nodes);
    EXPECT_EQ(read.global_bandwidth_fraction, profile.global_bandwidth_fraction);
    EXPECT_EQ(read.overlapped_compute_slowdown, profile.overlapped_compute_slowdown);

    std::ifstream in(path);
    std::string first_line;
    std::getline(in, first_line);
    EXPECT_EQ(first_line, "# measured here");

    profile.description = "has a # and \"quotes\", a back\\slash,\na line break and \x01";  // TOML escapes them
    write_machine_profile(path, profile, "", ExistingDestination::replace);
    EXPECT_EQ(load_machine_profile(path.string()).description, profile.description);

    profile.nic_bandwidth = 1e-300;  // nothing that would not read back is written
    auto const write_bad = [&] { write_machine_profile(dir / "bad.toml", profile, "", ExistingDestination::keep); };
    EXPECT_NE(error_of(write_bad).find("nic_bandwidth"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir / "bad.toml"));
}

// One bad profile file: its text, and a piece of the error that must name the problem.
struct BadProfile {
    std::string name;
    std::string text;
    std::string expected;

    friend void PrintTo(BadProfile const& bad, std::ostream* out) { *out << bad.name; }
};

std::string const good_profile = R"(name = "test"
description = "a test machine"
devices_per_node = 4
peak_flops_fp32 = 1e13
peak_flops_bf16 = 1e14
gemm_efficiency = 0.8
gemm_half_size = 256
memory_bytes = 4e10
memory_bandwidth = 1e12
intra_node_bandwidth = 1e11
intra_node_latency = 2e-6
nic_bandwidth = 2.5e10
inter_node_latency = 5e-6
nics_per_node = 4
)";

// The good profile with the line that starts with `key =` replaced (or removed, when `line` is empty).
std::string replace_line(std::string const& key, std::string const& line) {
    std::string text = good_profile;
    std::size_t const start = text.find(key + " =");
    std::size_t const end = text.find('\n', start) + 1;
    return text.replace(start, end - start, line.empty() ? "" : line + "\n");
}

std::vector<BadProfile> const bad_profiles = {
    {"unknown_key", good_profile + "peak_flops_fp64 = 1e13\n", "bad.toml:15:1: unknown key 'peak_flops_fp64'"},
    {"unknown_section", good_profile + "[links]\nnvlink = 3\n", "unknown section 'links'"},
    {"missing_key", replace_line("memory_bandwidth", ""), "missing key 'memory_bandwidth'"},
    {"missing_name", replace_line("name", ""), "missing key 'name'"},
    {"name_not_text", replace_line("name", "name = 5"), "key 'name' is an integer, not a string"},
    {"not_a_number", replace_line("nic_bandwidth", "nic_bandwidth = fast"), "bad.toml:12:19: machine profile is not "
     "valid TOML"},
    {"trailing_text", replace_line("memory_bytes", "memory_bytes = 40GB"), "bad.toml:8:"},
    {"quoted_number", replace_line("memory_bytes", "memory_bytes = \"4e10\""),
     "key 'memory_bytes' is a string, not a number"},
    {"zero", replace_line("gemm_efficiency", "gemm_efficiency = 0"), "key 'gemm_efficiency' = 0 is outside"},
    {"efficiency_above_one", replace_line("gemm_efficiency", "gemm_efficiency = 5"),
     "key 'gemm_efficiency' = 5 is outside the range a machine can have, [0.001, 1]"},
    {"vanishing_bandwidth", replace_line("nic_bandwidth", "nic_bandwidth = 1e-300"),
     "key 'nic_bandwidth' = 1e-300 is outside the range a machine can have, [1000, 1e+14] bytes/s"},
    {"vanishing_flops", replace_line("peak_flops_bf16", "peak_flops_bf16 = 1e-300"), "key 'peak_flops_bf16' = 1e-300"},
    {"infinite", replace_line("memory_bandwidth", "memory_bandwidth = inf"), "key 'memory_bandwidth' = inf"},
    {"negative", replace_line("intra_node_latency", "intra_node_latency = -1e-6"), "key 'intra_node_latency'"},
    {"fractional_count", replace_line("devices_per_node", "devices_per_node = 4.5"),
     "key 'devices_per_node' is a number, not an integer"},
    {"two_values", replace_line("nics_per_node", "nics_per_node = 4 8"), "bad.toml:14:"},
    {"twice", good_profile + "devices_per_node = 2\n", "cannot redefine existing integer 'devices_per_node'"},
    {"bad_group_size", good_profile + "[allreduce_bus_bandwidth]\n1 = 1e11\n",
     "key '1' of [allreduce_bus_bandwidth] is not a group size"},
    {"bad_bus_bandwidth", good_profile + "[allreduce_bus_bandwidth]\n2 = 1e20\n", "allreduce_bus_bandwidth.2"},
    {"section_not_a_table", good_profile + "allreduce_bus_bandwidth = 3\n", "is an integer, not a section"},
    {"bad_strided_group_size", good_profile + "[allreduce_bus_bandwidth_stride2]\nfour = 1e11\n",
     "key 'four' of [allreduce_bus_bandwidth_stride2] is not a group size"},
    {"stride_one_section", good_profile + "[allreduce_bus_bandwidth_stride1]\n2 = 1e11\n",
     "unknown section 'allreduce_bus_bandwidth_stride1'"},
    {"vanishing_node_bandwidth", good_profile + "node_bandwidth = 0.5\n", "key 'node_bandwidth' = 0.5"},
    {"network_groups_without_their_links", good_profile + "network_group_nodes = 128\n",
     "'network_group_nodes' and 'global_bandwidth_fraction' go together"},
    {"global_fraction_above_one", good_profile + "network_group_nodes = 128\nglobal_bandwidth_fraction = 2\n",
     "key 'global_bandwidth_fraction' = 2"},
    {"negative_slowdown", good_profile + "overlapped_compute_slowdown = -0.2\n",
     "key 'overlapped_compute_slowdown' = -0.2"},
};

class BadProfileFile : public ::testing::TestWithParam<BadProfile> {};

TEST_P(BadProfileFile, FailsNamingTheFileAndKey) {
    testing::TempDir const dir;
    fs::path const path = dir / "bad.toml";
    std::ofstream(path) << GetParam().text;
    std::string const message = error_of([&] { load_machine_profile(path.string()); });
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(MachineProfile, BadProfileFile, ::testing::ValuesIn(bad_profiles),
                         [](auto const& info) { return info.param.name; });

TEST(MachineProfile, GoodTestProfileLoads) {
    testing::TempDir const dir;
    fs::path const path = dir / "good.toml";
    std::ofstream(path) << good_profile << "[allreduce_bus_bandwidth]\n2 = 7.6e10\n";
    MachineProfile const profile = load_machine_profile(path.string());
    EXPECT_EQ(profile.nics_per_node, 4);
    EXPECT_EQ(profile.allreduce_bus_bandwidth.at(2), 7.6e10);
}

// $AXONN_MACHINES_DIR moves the machine folder (local.toml, the tuned grid); the bundled profiles that --help
// offers still load by name (`plan` failed on its own default, perlmutter), after the folder's own.
TEST(MachineProfile, TheBundledProfilesLoadWhereverTheMachineFolderIs) {
    testing::TempDir const dir;
    ::setenv("AXONN_MACHINES_DIR", dir.path().c_str(), 1);
    fs::path const bundled = machine_profile_path("perlmutter");
    EXPECT_EQ(bundled.filename(), "perlmutter.toml");
    EXPECT_NO_THROW(load_machine_profile("frontier"));
    std::ofstream(dir / "perlmutter.toml") << good_profile;
    EXPECT_EQ(machine_profile_path("perlmutter"), dir / "perlmutter.toml");
    std::string const message = error_of([] { machine_profile_path("summit"); });
    ::unsetenv("AXONN_MACHINES_DIR");
    EXPECT_NE(message.find("perlmutter (the .toml files in " + dir.path().string() + "), or alps, frontier"),
              std::string::npos)
        << message;
    EXPECT_NE(bundled.parent_path(), dir.path());
}

TEST(MachineProfile, UnknownNameListsTheProfiles) {
    std::string const message = error_of([] { load_machine_profile("summit"); });
    EXPECT_NE(message.find("unknown machine profile 'summit'"), std::string::npos) << message;
    EXPECT_NE(message.find("alps, frontier"), std::string::npos) << message;
    EXPECT_NE(message.find("perlmutter"), std::string::npos) << message;
    EXPECT_NE(error_of([] { load_machine_profile("/nowhere/machine.toml"); }).find("/nowhere/machine.toml"),
              std::string::npos);
}

}  // namespace
}  // namespace axonn
