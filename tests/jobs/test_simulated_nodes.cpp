// `axonn calibrate` on two simulated nodes of two ranks (scripts/slow-network --nodes 2 --ranks-per-node 2: each
// node's daemon in a UTS namespace of its own, the loopback between them rate-limited): the profile has nodes of 2
// devices and a bandwidth between nodes far below the one inside a node, which the shaped loopback carries. Skipped
// (not passed) where the machine grants no network or UTS namespace.
// And an elastic restart (scripts/elastic-train): a run on those two nodes loses one of them mid-run (its ranks
// killed, the node gone from the host list) and goes on from its last checkpoint on the two ranks left, on a grid
// the planner picks for them (on a written profile; the calm run measures one); every step's loss then follows the
// run that was never interrupted within the tolerance of two grids (1e-4 relative, test_model_grids.cpp), on random
// tokens, whose batches differ, so that a batch trained twice or skipped would show.
#include "axonn/perf/machine_profile.h"
#include "jobs/job.h"

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <random>
#include <chrono>
#include <thread>

namespace axonn::testing {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_simulated_nodes {

namespace fs = std::filesystem;

class SimulatedNodes : public JobTest {
protected:
    // Runs `command` on simulated nodes (scripts/slow-network ... --); the skip reason where namespaces are refused.
    static std::string slow_network(std::string const& options, std::string const& command) {
        return "env OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout " +
               std::to_string(time_limit(300)) + " " + std::string(AXONN_SOURCE_DIR) + "/scripts/slow-network " +
               options + " -- " + command + " > " + (dir_ / "out.txt").string() + " 2> " + (dir_ / "err.txt").string();
    }
    static bool no_namespaces(int status, std::string const& errors) {
        return WEXITSTATUS(status) == 2 && errors.find("namespace") != std::string::npos;
    }
};

TEST_F(SimulatedNodes, CalibrateMeasuresInsideAndBetweenNodesApart) {
    fs::path const profile = dir_ / "two-nodes.toml";
    std::string const command =
        slow_network("--rate 1gbit --nodes 2 --ranks-per-node 2",
                     "mpirun -np 4 " + axonn() + " calibrate --quick --name two-nodes --out " + profile.string());
    int const status = std::system(command.c_str());
    std::string const errors = file_bytes(dir_ / "err.txt");
    if (no_namespaces(status, errors)) GTEST_SKIP() << "no namespaces here: " << errors;
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

TEST_F(SimulatedNodes, ALostNodeRestartsTheRunOnTheNodesLeft) {
    fs::path const data = dir_ / "random";
    fs::create_directories(data);
    std::mt19937 random(7);
    std::vector<std::int32_t> tokens(40000);
    for (std::int32_t& token : tokens) token = static_cast<std::int32_t>(random() % 256);
    write_token_shard(data / "train.bin", tokens, 16);
    write_token_shard(data / "val.bin", tokens, 16);
    std::string const options = axonn() + " train --model gpt2-micro --tokenizer byte --data " + data.string() +
                                " --steps 12 --batch 8 --seq 64 --ckpt-every 3 --eval-every 100 --eval-batches 1 "
                                "--sample-tokens 0 --grid auto --gemm-tuning off ";
    JobResult const calm = mpirun("-np 4 " + options + "--ckpt-dir " + (dir_ / "calm").string() + " --metrics " +
                                  (dir_ / "calm.jsonl").string());
    ASSERT_EQ(calm.exit_status, 0) << calm.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("machine profile measured now"), std::string::npos);
    std::map<int, std::string> const expected = step_results(dir_ / "calm.jsonl");
    ASSERT_EQ(expected.size(), 12u);

    // Each launch of the elastic run plans on a written profile, Perlmutter's (any will do): measuring one takes
    // each launch about 7 s here, which the calm run has shown.
    fs::path const profiles = dir_ / "machines";
    fs::create_directories(profiles);
    fs::copy_file(fs::path(AXONN_SOURCE_DIR) / "configs" / "machines" / "perlmutter.toml", profiles / "local.toml");
    fs::path const hosts = dir_ / "hosts", ckpt = dir_ / "elastic", metrics = dir_ / "elastic.jsonl";
    std::ofstream(hosts) << "127.0.0.2 slots=2\n127.0.0.3 slots=2\n";
    std::string const command = slow_network(
        "--rate 10gbit --nodes 2 --ranks-per-node 2",
        std::string(AXONN_SOURCE_DIR) + "/scripts/elastic-train --hosts-from 'cat " + hosts.string() +
            "' -- env AXONN_MACHINES_DIR=" + profiles.string() + " " + options + "--ckpt-dir " + ckpt.string() +
            " --resume latest --metrics " + metrics.string());
    int status = 0;
    {
        BackgroundJob job(command);
        // Killed after step 7: the checkpoint of step 6 is the newest.
        while (step_results(metrics).size() < 8 && job.running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::vector<pid_t> const ranks = BackgroundJob::ranks(ckpt.string());
        std::string const errors = file_bytes(dir_ / "err.txt");
        if (!job.running() && errors.find("namespace") != std::string::npos) GTEST_SKIP() << errors;
        ASSERT_EQ(ranks.size(), 4u) << errors;
        // The second node fails: its health check drops it from the list, and its ranks die.
        std::ofstream(hosts) << "127.0.0.2 slots=2\n";
        for (pid_t pid : ranks) {
            std::string const environment = file_bytes("/proc/" + std::to_string(pid) + "/environ");
            for (char const* rank : {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_RANK=3"}) {
                if (environment.find(std::string(rank) + '\0') != std::string::npos) ::kill(pid, SIGKILL);
            }
        }
        status = job.wait();
    }
    std::string const errors = file_bytes(dir_ / "err.txt"), printed = file_bytes(dir_ / "out.txt");
    ASSERT_EQ(status, 0) << errors;
    EXPECT_NE(errors.find("elastic-train: lost 2 rank(s)"), std::string::npos) << errors;
    EXPECT_NE(errors.find("elastic-train: launch 2 on 2 rank(s): 127.0.0.2"), std::string::npos) << errors;
    EXPECT_NE(printed.find("resuming from " + (ckpt / "step_00000006").string()), std::string::npos) << printed;
    EXPECT_NE(printed.find(" over 2 rank(s)"), std::string::npos) << printed;
    EXPECT_NE(printed.find("machine profile " + (profiles / "local.toml").string()), std::string::npos) << printed;
    // Each step once in the metrics (the killed run's records after step 6 were dropped and trained again).
    std::size_t records = 0;
    for (std::string const& line : lines_of(metrics)) records += line.find("\"loss\"") != std::string::npos;
    EXPECT_EQ(records, 12u);
    std::map<int, std::string> const results = step_results(metrics);
    ASSERT_EQ(results.size(), 12u);
    for (auto const& [step, text] : results) {
        double const loss = std::stod(text), wanted = std::stod(expected.at(step));
        EXPECT_LT(std::abs(loss - wanted) / wanted, 1e-4) << "step " << step;
    }
}

}  // namespace test_simulated_nodes
}  // namespace axonn::testing
