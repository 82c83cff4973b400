// `axonn memorization study` on a 4-rank grid with two tensor axes (y=2, x=2) against the same study on one rank,
// with a small setting (model XS, buckets 1 and 32, 40 + 150 steps): every record's exact match and token match
// are equal and its losses within 1e-3 relative (each run's weights follow the serial run's within the parity
// tolerance; 190 AdamW steps let the differences grow, and a greedy token may still flip where two logits nearly
// tie, which would show here as a different match count).
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

namespace axonn::testing {
namespace {

class MemorizationJob : public JobTest {};

nlohmann::json results_of(std::filesystem::path const& out) {
    std::ifstream in(out / "results.json");
    return nlohmann::json::parse(in);
}

TEST_F(MemorizationJob, StudyOnAGridMatchesTheSerialStudy) {
    std::string const study = axonn() + " memorization study --quick --sizes XS --pretrain-steps 40 --steps 150 --out ";
    JobResult const serial = mpirun("-np 1 " + study + (dir_ / "serial").string());
    ASSERT_EQ(serial.exit_status, 0) << serial.stderr_text;
    JobResult const grid = mpirun("-np 4 " + study + (dir_ / "grid").string() + " --grid data=1,z=1,y=2,x=2");
    ASSERT_EQ(grid.exit_status, 0) << grid.stderr_text;
    nlohmann::json const expected = results_of(dir_ / "serial"), actual = results_of(dir_ / "grid");
    ASSERT_EQ(actual.size(), expected.size());
    ASSERT_GT(actual.size(), 0u);
    for (std::size_t i = 0; i < actual.size(); ++i) {
        std::string const where = expected[i]["loss"].get<std::string>() + " " + expected[i]["repetitions"].dump();
        EXPECT_EQ(actual[i]["exact_match"], expected[i]["exact_match"]) << where;
        EXPECT_EQ(actual[i]["token_match"], expected[i]["token_match"]) << where;
        for (char const* field : {"val_loss", "canary_loss"}) {
            double const a = actual[i][field], e = expected[i][field];
            EXPECT_LT(std::abs(a - e) / e, 1e-3) << where << " " << field;
        }
    }
}

}  // namespace
}  // namespace axonn::testing
