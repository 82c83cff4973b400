// `axonn generate` under mpirun: a model trained on a 4-rank grid (which also samples at the end of training on
// that grid, the model never gathered) continues three prompts of a file on one rank and on 4 ranks with a Z
// split and a Y split (data=1,z=2,y=2,x=1: the prompts shared over the two Z replicas, which step together), with
// sampled decoding; the tokens must be the same (the library test covers every grid and the reasons).
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace axonn::testing {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_generation_jobs {

class GenerationJob : public JobTest {};

TEST_F(GenerationJob, FourRanksContinueAsOne) {
    JobResult const trained = mpirun("-np 4 " + train("--steps 20 --batch 8 --seq 32 --grid data=1,z=1,y=2,x=2 "
                                                      "--sample-tokens 20 --prompt abc --ckpt-dir " +
                                                      (dir_ / "ckpt").string()));
    ASSERT_EQ(trained.exit_status, 0) << trained.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("---- sample ----\nabc"), std::string::npos);

    std::ofstream(dir_ / "prompts.txt") << "It is a truth\nabc\nShe said, \"No\"\n";
    std::string const generate = axonn() + " generate --tokenizer byte --model-dir " + (dir_ / "ckpt").string() +
                                 " --prompt-file " + (dir_ / "prompts.txt").string() +
                                 " --max-new-tokens 50 --temperature 0.8 --top-k 20 --seed 9 --json";
    JobResult const one = mpirun("-np 1 " + generate);
    ASSERT_EQ(one.exit_status, 0) << one.stderr_text;
    nlohmann::json const expected = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    JobResult const four = mpirun("-np 4 " + generate + " --grid data=1,z=2,y=2,x=1");
    ASSERT_EQ(four.exit_status, 0) << four.stderr_text;
    nlohmann::json const actual = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_EQ(actual.size(), 3u);
    for (std::size_t p = 0; p < 3; ++p) {
        EXPECT_EQ(actual[p]["tokens"].size(), 50u);
        EXPECT_EQ(actual[p]["tokens"], expected[p]["tokens"]) << "prompt " << p;
    }
}

}  // namespace test_generation_jobs
}  // namespace axonn::testing
