// `axonn tune` under mpirun, with a folder of machine profiles of its own (no local.toml there, so the profile is
// a quick calibration of this machine): on 4 ranks it times the planner's best 3 grids of gpt2-micro (B = 8,
// T = 16), writes the measured fastest to tuned-grid.json beside the profiles, and then:
//   - `axonn train --grid FILE` runs that grid and order, and says where the grid came from;
//   - `axonn train --grid auto` takes it for the same job, and plans afresh for another batch (with a profile put
//     in the folder first, Perlmutter's: any will do, and a second quick calibration would take 10 s here).
#include "jobs/job.h"

#include <nlohmann/json.hpp>

namespace axonn::testing {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_tune_jobs {

namespace fs = std::filesystem;

class TuneJob : public JobTest {};

TEST_F(TuneJob, TimesTheTopGridsAndTrainTakesTheFastest) {
    fs::path const profiles = dir_ / "machines";
    fs::create_directories(profiles);
    std::string const environment = "-np 4 -x AXONN_MACHINES_DIR=" + profiles.string() + " ";
    JobResult const tuned = mpirun(environment + axonn() + " tune --model gpt2-micro --tokenizer byte --batch 8 "
                                   "--seq 16 --top 3 --json");
    ASSERT_EQ(tuned.exit_status, 0) << tuned.stderr_text;
    nlohmann::json const result = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_EQ(result["grids"].size(), 3u) << result.dump();
    double fastest = 1e9;
    std::string fastest_grid;
    for (auto const& grid : result["grids"]) {
        EXPECT_GT(grid["measured_s"].get<double>(), 0.0);
        EXPECT_GT(grid["predicted_s"].get<double>(), 0.0);
        if (grid["measured_s"].get<double>() < fastest) {
            fastest = grid["measured_s"].get<double>();
            fastest_grid = grid["grid"].get<std::string>();
        }
    }
    EXPECT_EQ(result["fastest"], fastest_grid);
    fs::path const file = profiles / "tuned-grid.json";
    EXPECT_EQ(result["written"], file.string());
    nlohmann::json const written = nlohmann::json::parse(file_bytes(file));
    EXPECT_EQ(written["step_s"].get<double>(), fastest);

    JobResult const from_file = mpirun(environment + train("--batch 8 --seq 16 --steps 2 --eval-every 100 "
                                                           "--eval-batches 1 --grid " + file.string()));
    ASSERT_EQ(from_file.exit_status, 0) << from_file.stderr_text;
    std::string const banner = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(banner.find("grid " + fastest_grid + " (from " + file.string()), std::string::npos) << banner;

    JobResult const automatic = mpirun(environment + train("--batch 8 --seq 16 --steps 2 --eval-every 100 "
                                                           "--eval-batches 1 --grid auto"));
    ASSERT_EQ(automatic.exit_status, 0) << automatic.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("grid auto: " + fastest_grid), std::string::npos);
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("measured fastest by `axonn tune`"), std::string::npos);

    fs::copy_file(fs::path(AXONN_SOURCE_DIR) / "configs" / "machines" / "perlmutter.toml", profiles / "local.toml");
    JobResult const other_batch = mpirun(environment + train("--batch 4 --seq 16 --steps 2 --eval-every 100 "
                                                             "--eval-batches 1 --grid auto"));
    ASSERT_EQ(other_batch.exit_status, 0) << other_batch.stderr_text;
    std::string const planned = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(planned.find("predicted"), std::string::npos) << planned;
    EXPECT_EQ(planned.find("measured fastest by `axonn tune`"), std::string::npos) << planned;
}

}  // namespace test_tune_jobs
}  // namespace axonn::testing
