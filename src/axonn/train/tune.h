// `axonn tune`: the planner's best few grids for a job, timed on the allocation it runs on. The performance model
// ranks every grid of the job's ranks on this machine's profile (train/grid_choice.h: local_machine_profile); the
// top K are each trained for a few steps the way `axonn bench` times them (10 iterations, the mean of the last 8,
// the slowest rank's), and the fastest is written to a grid file that `axonn train --grid FILE` reads and
// `--grid auto` prefers. AxoNN prunes to its top grids and times them in the same way: the model ranks, the
// measurement decides.
#pragma once

#include "axonn/train/benchmark.h"
#include "axonn/train/grid_choice.h"

#include <filesystem>
#include <vector>

namespace axonn {

struct TuneOptions {
    BenchOptions bench;  // the job: model, batch, sequence, threads, step options, grid order; its grid is unused
    int top = 3;         // grids timed
    std::filesystem::path out;  // the grid file; empty: tuned_grid_path()
    bool overwrite = false;     // replace an existing file at `out`

    std::filesystem::path grid_file() const { return out.empty() ? tuned_grid_path() : out; }
};

struct TunedGrid {
    GridShape grid;
    double predicted_s = 0;  // the performance model's step time
    double measured_s = 0;
};

struct TuneResult {
    std::vector<TunedGrid> grids;  // in the planner's order
    std::size_t fastest = 0;       // index of the measured fastest
    std::string profile_source;
    std::filesystem::path written;
};

// Collective over MPI_COMM_WORLD; rank 0 writes the grid file. The same result on every rank.
TuneResult run_tune(TuneOptions const& options);

}  // namespace axonn
