// `axonn bench` under mpirun: the mean step, and the fastest and slowest timed steps beside it (each step counted
// at its slowest rank's time), agree with one another and with tokens/s, in JSON and in the text line. Every
// family runs through the same job: `bench` and `parity` on a Llama over an 8-rank grid report what they report
// for GPT-2. The breakdown of a step is the trace's spans summed: each kind of kernel, the waits, the rest.
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

namespace axonn::testing {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_bench_jobs {

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
    std::string const text = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(text.find(" s/step ("), std::string::npos) << text;
    // The breakdown's line names every part, and its shares of the step (each rounded to 0.1%) add up to the step.
    std::size_t const line = text.find("per step (rank 0, 4 timed steps): GEMMs ");
    ASSERT_NE(line, std::string::npos) << text;
    std::string const breakdown = text.substr(line, text.find('\n', line) - line);
    double shares = 0;
    for (char const* part : {"GEMMs ", "attention ", "norms ", "element-wise ", "optimizer ", "exposed communication ",
                             "the rest "}) {
        std::size_t const at = breakdown.find(part);
        ASSERT_NE(at, std::string::npos) << part << " is missing from: " << breakdown;
        std::size_t const open = breakdown.find('(', at);
        shares += std::stod(breakdown.substr(open + 1));
    }
    EXPECT_NEAR(shares, 100.0, 7 * 0.05 + 1e-9) << breakdown;
}

// The breakdown in bench's JSON is rank 0's kernel spans in its trace summed by category over the timed steps,
// and the waits for collectives: per step, to the trace's rounding (its times are microseconds in doubles).
TEST_F(BenchJob, ItsBreakdownIsTheSpansOfItsTrace) {
    std::filesystem::path const trace = dir_ / "trace.json";
    int const iterations = 5, warmup = 2, timed = iterations - warmup;
    JobResult const run =
        mpirun("-np 2 " + axonn() + " bench --model gpt2-micro --batch 4 --seq 16 --iters " +
               std::to_string(iterations) + " --grid data=1,z=1,y=2,x=1 --json --trace " + trace.string());
    ASSERT_EQ(run.exit_status, 0) << run.stderr_text;
    nlohmann::json const breakdown = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"))["breakdown"];
    EXPECT_EQ(breakdown["steps"], timed);
    EXPECT_FALSE(breakdown["after_the_timed_steps"].get<bool>());  // a host backend's timed steps are broken down

    std::ifstream in(trace);
    nlohmann::json const file = nlohmann::json::parse(in);
    std::map<std::string, double> category_s, kernel_s;
    int step_spans = 0;
    for (nlohmann::json const& event : file["traceEvents"]) {
        if (event["ph"] != "X" || event["pid"] != 0) continue;
        std::string const category = event["cat"], name = event["name"];
        double const seconds = event["dur"].get<double>() * 1e-6;
        if (category == "step" && name.starts_with("step ")) ++step_spans;
        if (category == "step" || category == "collective") continue;
        category_s[category] += seconds;
        if (category != "wait") kernel_s[name] += seconds;
    }
    EXPECT_EQ(step_spans, timed);       // the trace holds the timed steps, the breakdown's
    double constexpr tolerance = 1e-7;  // seconds per step: the trace's doubles of microseconds, summed
    std::map<std::string, std::string> const fields = {{"gemm", "gemm_s"},           {"attention", "attention_s"},
                                                       {"norm", "norm_s"},           {"elementwise", "elementwise_s"},
                                                       {"optimizer", "optimizer_s"}, {"wait", "comm_exposed_s"}};
    for (auto const& [category, field] : fields) {
        EXPECT_NEAR(breakdown[field].get<double>(), category_s[category] / timed, tolerance) << field;
    }
    for (auto const& [category, seconds] : category_s) EXPECT_TRUE(fields.contains(category)) << category;
    EXPECT_GT(breakdown["gemm_s"].get<double>(), 0.0);
    EXPECT_GT(breakdown["comm_exposed_s"].get<double>(), 0.0);  // a y=2 grid waits on its all-reduces
    EXPECT_EQ(breakdown["kernel_s"].size(), kernel_s.size());
    for (auto const& [name, seconds] : kernel_s) {
        EXPECT_NEAR(breakdown["kernel_s"][name].get<double>(), seconds / timed, tolerance) << name;
    }
    double parts = 0;
    for (auto const& [category, field] : fields) parts += breakdown[field].get<double>();
    EXPECT_GE(breakdown["rest_s"].get<double>(), 0.0);
    EXPECT_NEAR(parts + breakdown["rest_s"].get<double>(), breakdown["step_s"].get<double>(), 1e-12);
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

}  // namespace test_bench_jobs
}  // namespace axonn::testing
