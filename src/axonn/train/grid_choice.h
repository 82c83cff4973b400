// How a run's grid is chosen when the user does not name one: by the performance model on this machine's profile
// (`--grid auto`), or by measurement: `axonn tune` times the planner's best few grids and writes the fastest to a
// grid file, which `--grid FILE` reads and `--grid auto` prefers when it was measured for the same job (the same
// model, batch, sequence length and number of ranks).
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/model_config.h"
#include "axonn/perf/calibrate.h"
#include "axonn/perf/machine_profile.h"
#include "axonn/perf/planner.h"
#include "axonn/train/grid_file.h"
#include "axonn/train/train_step.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

// This machine's profile for the planner: configs/machines/local.toml, or a quick calibration now when there is
// none (all ranks measure together). Collective over MPI_COMM_WORLD; `machine` is complete on rank 0 only.
struct LocalProfile {
    MachineProfile machine;
    std::string source;  // the file, or "measured now (...)"
};
LocalProfile local_machine_profile();

// `axonn calibrate`'s measurements on its job (train/job.h): the CPU backend in fp32, each GEMM run one way (the
// library's rate, not the tuner's choice), every rank on the data axis. Collective over MPI_COMM_WORLD; the profile
// is complete on rank 0 only.
MachineProfile measure_machine_profile(CalibrateOptions const& options);

// The planner's request for a job of this model, global batch, sequence length, step options and axis order on
// `ranks` devices of `machine`: what `--grid auto` and `axonn tune` rank.
PlanRequest job_plan_request(ModelConfig const& model, int ranks, int batch, int seq, StepOptions const& run,
                             std::string const& grid_order, MachineProfile const& machine);

// What an error that found no grid for `job` (job_plan_request's, and its axis order) suggests, to see why: "run
// `axonn plan ... --explain`", the plan command given the job as it is (its preset, and what the job changed of
// it: the tokenizer's vocabulary, --n-layer, ...; its step options where they are not the defaults) on this
// machine's profile, after writing that profile with `axonn calibrate` where the job measured it without writing
// it (`profile`'s source).
std::string plan_explain_advice(PlanRequest const& job, std::string const& grid_order, LocalProfile const& profile);

// --grid auto: the grid `axonn tune` measured fastest for this very job, if its grid file says so (grid_order
// becomes the file's); else rank 0 plans on the local machine profile (configs/machines/local.toml, or a quick
// calibration now when there is none) and every rank gets its choice, so that all ranks agree, also when no grid
// fits (a usage error). Collective over MPI_COMM_WORLD.
GridShape choose_grid(ModelConfig const& model, int batch, int seq, StepOptions const& run, std::string& grid_order,
                      int world);

// Where `axonn tune` writes by default, and `--grid auto` looks: tuned-grid.json beside the machine profiles.
std::filesystem::path tuned_grid_path();

// This machine's profile, which `--grid auto` and `axonn tune` plan on: local.toml beside the other profiles.
std::filesystem::path local_profile_path();

// The files `--grid auto` reads (the tuned grid, the machine profile), which no output of the run may replace.
std::vector<std::filesystem::path> grid_auto_inputs();

// --grid auto's measured choice: the tuned grid file, when it exists and was measured for `job`; decided by rank 0
// and the same on every rank (collective over MPI_COMM_WORLD).
std::optional<GridFile> tuned_grid_for(GridJob const& job);

}  // namespace axonn
