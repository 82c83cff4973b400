// `axonn calibrate` on two simulated nodes of two ranks (scripts/slow-network --nodes 2 --ranks-per-node 2: each
// node's daemon in a UTS namespace of its own, the loopback between them rate-limited): the profile has nodes of 2
// devices and a bandwidth between nodes far below the one inside a node, which the shaped loopback carries. Skipped
// (not passed) where the machine grants no network or UTS namespace.
#include "axonn/perf/machine_profile.h"
#include "jobs/job.h"

#include <cstdlib>

namespace axonn::testing {
namespace {

namespace fs = std::filesystem;

class SimulatedNodes : public JobTest {};

TEST_F(SimulatedNodes, CalibrateMeasuresInsideAndBetweenNodesApart) {
    fs::path const profile = dir_ / "two-nodes.toml";
    std::string const command =
        "OMP_NUM_THREADS=1 timeout 120 " + std::string(AXONN_SOURCE_DIR) + "/scripts/slow-network --rate 1gbit " +
        "--nodes 2 --ranks-per-node 2 -- mpirun --allow-run-as-root -np 4 " + axonn() +
        " calibrate --quick --name two-nodes --out " + profile.string() + " > " + (dir_ / "out.txt").string() +
        " 2> " + (dir_ / "err.txt").string();
    int const status = std::system(command.c_str());
    std::string const errors = file_bytes(dir_ / "err.txt");
    if (WEXITSTATUS(status) == 2 && errors.find("namespace") != std::string::npos) {
        GTEST_SKIP() << "no namespaces here: " << errors;
    }
    ASSERT_EQ(WEXITSTATUS(status), 0) << errors;
    MachineProfile const measured = load_machine_profile(profile.string());
    EXPECT_EQ(measured.devices_per_node, 2);
    EXPECT_NE(measured.description.find("2 nodes"), std::string::npos) << measured.description;
    EXPECT_GT(measured.node_bandwidth, 0.0);
    EXPECT_EQ(measured.nic_bandwidth, measured.node_bandwidth);
    // 1 Gbit/s is 0.125 GB/s for both nodes together; shared memory inside a node moves gigabytes per second.
    EXPECT_LT(measured.node_bandwidth, 0.2e9);
    EXPECT_GT(measured.intra_node_bandwidth, 10 * measured.node_bandwidth);
    EXPECT_GT(measured.inter_node_latency, measured.intra_node_latency);
}

}  // namespace
}  // namespace axonn::testing
