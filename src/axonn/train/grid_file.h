// The grid file that `axonn tune` writes and `--grid FILE` and `--grid auto` read (JSON):
//   {"format": "axonn-grid", "version": 1, "grid": {"data", "z", "y", "x"}, "grid_order": "x,y,z,data",
//    "model": "<ModelConfig::summary()>", "batch": B, "seq": T, "ranks": N, "step_s": measured seconds per step,
//    "machine": the profile that ranked the candidates, "candidates": [{"grid", "predicted_s", "measured_s"}, ...]}
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/file_io.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace axonn {

// The "format" a grid file's JSON names.
inline constexpr char const* grid_file_format = "axonn-grid";

// The job a grid was chosen for.
struct GridJob {
    std::string model;  // ModelConfig::summary()
    int batch = 0;
    int seq = 0;
    int ranks = 0;
    bool operator==(GridJob const&) const = default;
};

struct GridFile {
    GridShape grid;
    std::string grid_order = "x,y,z,data";
    GridJob job;
    double step_s = 0;  // measured
    std::string machine;
    nlohmann::json candidates = nlohmann::json::array();
};

// Whether a --grid value names a grid file: it is neither "auto" nor a list of axis=size.
bool names_grid_file(std::string const& spec);

// Writes `file` (its folder made first); `existing`: what happens to a file that appeared at `path` meanwhile.
void write_grid_file(std::filesystem::path const& path, GridFile const& file, ExistingDestination existing);
// Reads and checks a grid file; an unreadable or malformed one is an axonn::Error naming the file and the fix.
GridFile read_grid_file(std::filesystem::path const& path);
// The same for the text of the file `path`.
GridFile parse_grid_file(std::string const& text, std::filesystem::path const& path);

}  // namespace axonn
