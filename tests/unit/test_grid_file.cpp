// Grid files (train/grid_choice.h), which `axonn tune` writes and `axonn train --grid FILE` reads: what is written
// reads back; a --grid value is a file unless it is "auto" or axis=size; and each malformed file is refused with
// one line that names it and the problem.
#include "axonn/train/grid_choice.h"

#include "support/error_of.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

GridFile sample() {
    GridFile file;
    file.grid = {1, 2, 1, 2};
    file.grid_order = "y,x,z,data";
    file.job = {"gpt2-tiny (gpt2): 2 layers", 8, 64, 4};
    file.step_s = 0.0125;
    file.machine = "configs/machines/local.toml";
    file.candidates = nlohmann::json::array({{{"grid", "data=1,z=2,y=1,x=2"}, {"measured_s", 0.0125}}});
    return file;
}

TEST(GridFile, ReadsBackAsWritten) {
    testing::TempDir dir;
    GridFile const written = sample();
    write_grid_file(dir.path() / "sub" / "grid.json", written, ExistingDestination::keep);
    GridFile const read = read_grid_file(dir.path() / "sub" / "grid.json");
    EXPECT_EQ(read.grid, written.grid);
    EXPECT_EQ(read.grid_order, written.grid_order);
    EXPECT_EQ(read.job, written.job);
    EXPECT_EQ(read.step_s, written.step_s);
    EXPECT_EQ(read.machine, written.machine);
    EXPECT_EQ(read.candidates, written.candidates);
}

TEST(GridFile, AGridValueIsAFileUnlessAutoOrAxisSizes) {
    EXPECT_TRUE(names_grid_file("runs/grid.json"));
    EXPECT_TRUE(names_grid_file("tuned"));
    EXPECT_FALSE(names_grid_file("auto"));
    EXPECT_FALSE(names_grid_file("data=1,z=1,y=2,x=2"));
    EXPECT_FALSE(names_grid_file("y=4"));
}

struct BadGridFile {
    char const* name;
    std::string text;
    char const* expected;
};

TEST(GridFile, MalformedFilesAreRefusedByName) {
    testing::TempDir dir;
    write_grid_file(dir.path() / "good.json", sample(), ExistingDestination::keep);
    std::ifstream in(dir.path() / "good.json");
    auto const good = nlohmann::json::parse(in);
    auto const edited = [&good](auto&& edit) {
        nlohmann::json copy = good;
        edit(copy);
        return copy.dump();
    };
    std::vector<BadGridFile> const cases = {
        {"not_json", "{oops", "is not a grid file (written by `axonn tune`)"},
        {"a_checkpoint_index", R"({"format": "axonn-checkpoint"})", "is not a grid file"},
        {"format_not_text", R"({"format": 7})", "is not a grid file"},
        {"version_not_a_number", edited([](auto& j) { j["version"] = "1"; }), "has version \"1\", and this axonn"},
        {"time_not_a_number", edited([](auto& j) { j["step_s"] = "fast"; }), "\"step_s\" is not a number"},
        {"machine_not_text", edited([](auto& j) { j["machine"] = 5; }), "\"machine\" is not a string"},
        {"too_deep", std::string(1000, '['), "is not a grid file (written by `axonn tune`): the JSON nests deeper"},
        {"newer_version", edited([](auto& j) { j["version"] = 2; }), "has version 2, and this axonn reads version 1"},
        {"no_grid", edited([](auto& j) { j.erase("grid"); }), "has no \"grid\" object"},
        {"zero_axis", edited([](auto& j) { j["grid"]["y"] = 0; }), "has no positive integer \"y\""},
        // Trained on the other axes without a word.
        {"unknown_axis", edited([](auto& j) { j["grid"]["w"] = 5; }),
         "its grid names an axis \"w\", where a grid has data, z, y and x only"},
        {"no_order", edited([](auto& j) { j.erase("grid_order"); }), "has no text \"grid_order\""},
        // A bad command line's message, exit 2, without the file's name.
        {"order_without_data", edited([](auto& j) { j["grid_order"] = "x,y,z"; }),
         "grid order 'x,y,z' must name each of x, y, z and data exactly once, fastest first, as in x,y,z,data: write "
         "it again with `axonn tune`"},
        {"grid_of_other_ranks", edited([](auto& j) { j["ranks"] = 8; }), "its grid data=1,z=2,y=1,x=2 is not of its 8"},
        // Edited by hand: announced as measured fastest, with the time of the grid that was.
        {"grid_not_the_fastest_measured",
         edited([](auto& j) { j["grid"] = {{"data", 4}, {"z", 1}, {"y", 1}, {"x", 1}}; }),
         "its grid data=4,z=1,y=1,x=1 at 0.0125 s a step is not the fastest of those it records as measured "
         "(data=1,z=2,y=1,x=2 at 0.0125 s): edited by hand? Write it again with `axonn tune`, or give the grid itself, "
         "--grid data=4,z=1,y=1,x=1"},
        {"time_not_the_fastest_measured", edited([](auto& j) { j["step_s"] = 0.001; }),
         "its grid data=1,z=2,y=1,x=2 at 0.001 s a step is not the fastest"},
        {"candidate_without_a_time", edited([](auto& j) { j["candidates"][0].erase("measured_s"); }),
         "a candidate is not {\"grid\": text, \"measured_s\": number}"},
    };
    for (BadGridFile const& bad : cases) {
        fs::path const path = dir.path() / (std::string(bad.name) + ".json");
        std::ofstream(path) << bad.text;
        std::string const error = error_of([&] { read_grid_file(path); });
        EXPECT_NE(error.find(bad.expected), std::string::npos) << bad.name << ": " << error;
        EXPECT_NE(error.find(path.string()), std::string::npos) << bad.name << " does not name the file: " << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << bad.name << ": " << error;
    }
    std::string const missing = error_of([&] { read_grid_file(dir.path() / "nowhere.json"); });
    EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

}  // namespace
}  // namespace axonn
