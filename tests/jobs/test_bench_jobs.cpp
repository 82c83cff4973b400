// `axonn bench` under mpirun: the mean step, and the fastest and slowest timed steps beside it (each step counted
// at its slowest rank's time), agree with one another and with tokens/s, in JSON and in the text line.
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

}  // namespace
}  // namespace axonn::testing
