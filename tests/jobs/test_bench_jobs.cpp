// `axonn bench` under mpirun: the mean step, and the fastest and slowest timed steps beside it (each step counted
// at its slowest rank's time), agree with one another and with tokens/s, in JSON and in the text line. Every
// family runs through the same job: `bench` and `parity` on a Llama over an 8-rank grid report what they report
// for GPT-2.
#include "jobs/job.h"

#include <nlohmann/json.hpp>

namespace axonn::testing {
namespace {

class BenchJob : public JobTest {};

TEST_F(BenchJob, ReportsTheSpreadOfItsTimedSteps) {
    std::string const bench = axonn() + " bench --model gpt2-micro --batch 4 --seq 16 --iters 6 --grid data=2";
    JobResult const as_json = mpirun("-np 2 " + bench + " --json");
    ASSERT_EQ(as_json.exit_status, 0) << as_json.stderr_text;
    nlohmann::json const result = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    double const fastest = result["fastest_step_s"], mean = result["step_s"], slowest = result["slowest_step_s"];
    EXPECT_GT(fastest, 0.0);
    EXPECT_LE(fastest, mean);
    EXPECT_LE(mean, slowest);
    // tokens/s is the batch's tokens over the mean step (to rounding).
    EXPECT_NEAR(result["tokens_per_s"].get<double>() * mean, 4.0 * 16.0, 1e-9 * 64.0);

    JobResult const as_text = mpirun("-np 2 " + bench);
    ASSERT_EQ(as_text.exit_status, 0) << as_text.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find(" s/step ("), std::string::npos) << file_bytes(dir_ / "stdout.txt");
}

// The keys of a command's JSON record.
std::vector<std::string> keys_of(nlohmann::json const& record) {
    std::vector<std::string> keys;
    for (auto const& [key, value] : record.items()) keys.push_back(key);
    return keys;
}

TEST_F(BenchJob, ALlamaOnAnEightRankGridReportsWhatGpt2Does) {
    std::string const bench = axonn() + " bench --batch 8 --seq 16 --iters 4 --json --grid data=2,z=1,y=2,x=2";
    JobResult const gpt = mpirun("-np 8 " + bench + " --model gpt2-micro");
    ASSERT_EQ(gpt.exit_status, 0) << gpt.stderr_text;
    nlohmann::json const gpt_record = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    JobResult const llama = mpirun("-np 8 " + bench + " --model llama-tiny");
    ASSERT_EQ(llama.exit_status, 0) << llama.stderr_text;
    nlohmann::json const llama_record = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    EXPECT_EQ(keys_of(llama_record), keys_of(gpt_record));
    EXPECT_EQ(llama_record["model"], "llama-tiny");
    EXPECT_GT(llama_record["tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(llama_record["mfu"].get<double>(), 0.0);
}

// parity on a Llama: the grid's losses, gradient norms and every gradient within 1e-5 of serial, as for GPT-2
// (tests/mpi/test_llama_grids.cpp checks the same through the library).
TEST_F(BenchJob, ParityOfALlamaOnAnEightRankGridMatchesSerial) {
    std::string const parity = axonn() + " parity --model llama-tiny --steps 1 --json --grid data=1,z=2,y=2,x=2";
    JobResult const run = mpirun("-np 8 " + parity);
    ASSERT_EQ(run.exit_status, 0) << run.stderr_text;
    nlohmann::json const report = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    EXPECT_EQ(report["grid"], "data=1,z=2,y=2,x=2");
    EXPECT_EQ(report["init_max_abs_diff"].get<double>(), 0.0);
    EXPECT_LT(report["max_rel_diff"].get<double>(), 1e-5);  // one step: test_llama_grids' tolerance
    EXPECT_EQ(report["grad_rel_diff"].size(), 9u);          // every tensor of a Llama
    for (auto const& [name, difference] : report["grad_rel_diff"].items()) {
        EXPECT_LT(difference.get<double>(), 1e-5) << "gradient of " << name;
    }
}

}  // namespace
}  // namespace axonn::testing
