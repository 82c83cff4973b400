// `axonn memorization study` on a 4-rank grid with two tensor axes (y=2, x=2) against the same study on one rank,
// with a small setting (model XS, buckets 1 and 32, 40 + 150 steps): every record's exact match and token match
// are equal and its losses within 1e-3 relative (each run's weights follow the serial run's within the parity
// tolerance; 190 AdamW steps let the differences grow, and a greedy token may still flip where two logits nearly
// tie, which would show here as a different match count).
// The extreme-repetition experiment (--experiment extreme) the same way, shortened (gpt2-micro and llama-tiny, so
// both tokenizers; 30 + 6 epochs × 5 steps), with the membership AUC within 0.02 (it ranks losses: two that nearly
// tie may swap). Its --quick version passes its criteria with --check, and --check exits non-zero, naming the
// criterion, when one fails (a run too short to memorize anything), in both experiments.
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

namespace axonn::testing {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_memorization_jobs {

class MemorizationJob : public JobTest {};
// Its jobs are one rank of one thread: ctest runs it beside other tests (tests/CMakeLists.txt, "OneRankJob").
using MemorizationOneRankJob = MemorizationJob;

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

std::string const extreme = " memorization study --experiment extreme --quick ";

TEST_F(MemorizationJob, ExtremeExperimentOnAGridMatchesTheSerialRun) {
    std::string const run = axonn() + extreme + "--models gpt2-micro,llama-tiny --epochs 6 --eval-every 3 "
                            "--pretrain-steps 30 --out ";
    JobResult const serial = mpirun("-np 1 " + run + (dir_ / "extreme-serial").string());
    ASSERT_EQ(serial.exit_status, 0) << serial.stderr_text;
    JobResult const grid = mpirun("-np 4 " + run + (dir_ / "extreme-grid").string() + " --grid data=1,z=1,y=2,x=2");
    ASSERT_EQ(grid.exit_status, 0) << grid.stderr_text;
    nlohmann::json const expected = results_of(dir_ / "extreme-serial"), actual = results_of(dir_ / "extreme-grid");
    ASSERT_EQ(actual.size(), expected.size());
    ASSERT_EQ(actual.size(), 2u * 2u * 4u);  // 2 models × 2 losses × epochs 0, 1, 3 and 6
    for (std::size_t i = 0; i < actual.size(); ++i) {
        std::string const where = expected[i]["model"].get<std::string>() + " " + expected[i]["goldfish"].get<std::string>() +
                                  " epoch " + expected[i]["epoch"].dump();
        EXPECT_EQ(actual[i]["exact_matches"], expected[i]["exact_matches"]) << where;
        EXPECT_EQ(actual[i]["token_match"], expected[i]["token_match"]) << where;
        for (char const* field : {"val_loss", "document_loss", "unseen_loss"}) {
            double const a = actual[i][field], e = expected[i][field];
            EXPECT_LT(std::abs(a - e) / e, 1e-3) << where << " " << field;
        }
        EXPECT_NEAR(actual[i]["auc"].get<double>(), expected[i]["auc"].get<double>(), 0.02) << where;
    }
}

TEST_F(MemorizationOneRankJob, ExtremeQuickPassesItsCriteria) {
    JobResult const run = mpirun("-np 1 " + axonn() + extreme + "--check --out " + (dir_ / "extreme-quick").string(),
                                 600);
    ASSERT_EQ(run.exit_status, 0) << run.stderr_text;
    EXPECT_NE(run.stderr_text.find("--check: all 4 criteria passed"), std::string::npos) << run.stderr_text;
    for (char const* file : {"results.md", "results.json", "exact_match.png", "ablations.png"}) {
        EXPECT_TRUE(std::filesystem::exists(dir_ / "extreme-quick" / file)) << file;
    }
}

TEST_F(MemorizationOneRankJob, CheckExitsNonZeroNamingTheCriterionThatFails) {
    JobResult const extreme_run = mpirun("-np 1 " + axonn() + extreme + "--models gpt2-micro --epochs 2 "
                                         "--pretrain-steps 10 --check --out " + (dir_ / "extreme-short").string());
    EXPECT_NE(extreme_run.exit_status, 0);
    EXPECT_NE(extreme_run.stderr_text.find("--check: a criterion failed: \"1. standard"), std::string::npos)
        << extreme_run.stderr_text;
    JobResult const buckets = mpirun("-np 1 " + axonn() + " memorization study --quick --sizes XS --pretrain-steps 40 "
                                     "--steps 150 --check --out " + (dir_ / "buckets-short").string());
    EXPECT_NE(buckets.exit_status, 0);
    EXPECT_NE(buckets.stderr_text.find("--check: a criterion failed: \"1b. standard"), std::string::npos)
        << buckets.stderr_text;
}

}  // namespace test_memorization_jobs
}  // namespace axonn::testing
