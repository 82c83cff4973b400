#include "axonn/train/grid_file.h"

#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/guarded_json.h"
#include "axonn/core/json_fields.h"

#include <fmt/format.h>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int grid_file_version = 1;

int positive_field(json const& object, char const* key, fs::path const& path) {
    AXONN_REQUIRE(object.contains(key) && object[key].is_number_integer() && object[key].get<std::int64_t>() >= 1 &&
                      object[key].get<std::int64_t>() <= (1 << 30),
                  "grid file {} has no positive integer \"{}\": write it again with `axonn tune`", path.string(), key);
    return object[key].get<int>();
}

std::string text_field(json const& object, char const* key, fs::path const& path) {
    AXONN_REQUIRE(object.contains(key) && object[key].is_string(),
                  "grid file {} has no text \"{}\": write it again with "
                  "`axonn tune`",
                  path.string(), key);
    return object[key].get<std::string>();
}

}  // namespace

// A grid file's grid and time are the fastest of the candidates it records as measured, as `axonn tune` writes it
// (none recorded: nothing to hold them to). A grid edited by hand was announced with another grid's time.
void require_fastest_of_candidates(GridFile const& file, fs::path const& path) {
    if (!file.candidates.is_array() || file.candidates.empty()) return;
    std::string fastest;
    double fastest_s = 0;
    for (json const& candidate : file.candidates) {
        bool const well_formed = candidate.is_object() && candidate.contains("grid") && candidate["grid"].is_string() &&
                                 candidate.contains("measured_s") && candidate["measured_s"].is_number();
        AXONN_REQUIRE(well_formed,
                      "grid file {}: a candidate is not {{\"grid\": text, \"measured_s\": number}}: write it again "
                      "with `axonn tune`",
                      path.string());
        double const measured_s = candidate["measured_s"].get<double>();
        if (fastest.empty() || measured_s < fastest_s) {
            fastest = candidate["grid"].get<std::string>();
            fastest_s = measured_s;
        }
    }
    AXONN_REQUIRE(fastest == file.grid.to_string() && fastest_s == file.step_s,
                  "grid file {}: its grid {} at {} s a step is not the fastest of those it records as measured ({} "
                  "at {} s): edited by hand? Write it again with `axonn tune`, or give the grid itself, --grid {}",
                  path.string(), file.grid.to_string(), file.step_s, fastest, fastest_s, file.grid.to_string());
}

GridFile parse_grid_file(std::string const& text, fs::path const& path) {
    json document;
    try {
        document = parse_guarded_json(text, 8);
    } catch (Error const& e) {
        fail("{} is not a grid file (written by `axonn tune`): {}: pass one, or a grid as data=D,z=Z,y=Y,x=X",
             path.string(), e.what());
    }
    AXONN_REQUIRE(document.is_object() && document.contains("format") &&
                      document["format"] == grid_file_format,
                  "{} is not a grid file (written by `axonn tune`): pass one, or a grid as data=D,z=Z,y=Y,x=X",
                  path.string());
    AXONN_REQUIRE(document.contains("version") && document["version"] == grid_file_version,
                  "grid file {} has version {}, and this axonn reads "
                  "version {}: write it again with `axonn tune`",
                  path.string(), document.contains("version") ? document["version"].dump() : "(none)",
                  grid_file_version);
    AXONN_REQUIRE(document.contains("grid") && document["grid"].is_object(),
                  "grid file {} has no \"grid\" object: write "
                  "it again with `axonn tune`",
                  path.string());
    json const& grid = document["grid"];
    for (auto const& [axis, size] : grid.items()) {
        AXONN_REQUIRE(axis == "data" || axis == "z" || axis == "y" || axis == "x",
                      "grid file {}: its grid names an axis \"{}\", where a grid has data, z, y and x only: write it "
                      "again with `axonn tune`",
                      path.string(), axis);
    }
    GridFile file;
    file.grid = {positive_field(grid, "data", path), positive_field(grid, "z", path), positive_field(grid, "y", path),
                 positive_field(grid, "x", path)};
    file.grid_order = text_field(document, "grid_order", path);
    try {
        parse_axis_order(file.grid_order);
    } catch (Error const& e) {
        fail("grid file {}: {}: write it again with `axonn tune`", path.string(), e.what());
    }
    file.job = {text_field(document, "model", path), positive_field(document, "batch", path),
                positive_field(document, "seq", path), positive_field(document, "ranks", path)};
    AXONN_REQUIRE(file.job.ranks == file.grid.product(), "grid file {}: its grid {} is not of its {} ranks",
                  path.string(), file.grid.to_string(), file.job.ranks);
    std::string const where = "grid file " + path.string();
    file.step_s = json_number_or(document, "step_s", where, 0.0);
    file.machine = json_text_or(document, "machine", where, "");
    file.candidates = document.value("candidates", json::array());
    require_fastest_of_candidates(file, path);
    return file;
}

bool names_grid_file(std::string const& spec) {
    return spec != "auto" && spec.find('=') == std::string::npos;
}

void write_grid_file(fs::path const& path, GridFile const& file, ExistingDestination existing) {
    json const document = {
        {"format", grid_file_format},
        {"version", grid_file_version},
        {"grid", {{"data", file.grid.data}, {"z", file.grid.z}, {"y", file.grid.y}, {"x", file.grid.x}}},
        {"grid_order", file.grid_order},
        {"model", file.job.model},
        {"batch", file.job.batch},
        {"seq", file.job.seq},
        {"ranks", file.job.ranks},
        {"step_s", file.step_s},
        {"machine", file.machine},
        {"candidates", file.candidates}};
    if (path.has_parent_path()) create_folder(path.parent_path(), "grid file folder");
    write_file_atomically(path, document.dump(2) + "\n", "grid file", existing);
}

GridFile read_grid_file(fs::path const& path) {
    return parse_grid_file(read_input_file(path, "grid file", "pass a file written by `axonn tune`", 1 << 20), path);
}

}  // namespace axonn
