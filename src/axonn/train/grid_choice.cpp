#include "axonn/train/grid_choice.h"

#include "axonn/comm/rank_zero.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/json_depth.h"
#include "axonn/perf/calibrate.h"
#include "axonn/train/job.h"

#include <fmt/format.h>
#include <mpi.h>

#include <array>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char const* grid_file_format = "axonn-grid";
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

GridFile parse_grid_file(std::string const& text, fs::path const& path) {
    try {
        require_json_depth(text, 8);
    } catch (Error const& e) {
        fail("grid file {}: {}: it is no grid file", path.string(), e.what());
    }
    json const document = json::parse(text, nullptr, false);
    AXONN_REQUIRE(!document.is_discarded() && document.is_object() && document.value("format", "") == grid_file_format,
                  "{} is not a grid file (written by `axonn tune`): pass one, or a grid as data=D,z=Z,y=Y,x=X",
                  path.string());
    AXONN_REQUIRE(document.value("version", 0) == grid_file_version,
                  "grid file {} has version {}, and this axonn reads "
                  "version {}: write it again with `axonn tune`",
                  path.string(), document.contains("version") ? document["version"].dump() : "(none)",
                  grid_file_version);
    AXONN_REQUIRE(document.contains("grid") && document["grid"].is_object(),
                  "grid file {} has no \"grid\" object: write "
                  "it again with `axonn tune`",
                  path.string());
    json const& grid = document["grid"];
    GridFile file;
    file.grid = {positive_field(grid, "data", path), positive_field(grid, "z", path), positive_field(grid, "y", path),
                 positive_field(grid, "x", path)};
    file.grid_order = text_field(document, "grid_order", path);
    file.job = {text_field(document, "model", path), positive_field(document, "batch", path),
                positive_field(document, "seq", path), positive_field(document, "ranks", path)};
    AXONN_REQUIRE(file.job.ranks == file.grid.product(), "grid file {}: its grid {} is not of its {} ranks",
                  path.string(), file.grid.to_string(), file.job.ranks);
    file.step_s = document.value("step_s", 0.0);
    file.machine = document.value("machine", "");
    file.candidates = document.value("candidates", json::array());
    return file;
}

}  // namespace

MachineProfile measure_machine_profile(CalibrateOptions const& options) {
    int world_size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    StepOptions run{.gemm_tuning = false};
    Job job(run, JobGrid{.shape = GridShape{.data = world_size}});
    return calibrate_machine(options, job.backend(), job.grid());
}

LocalProfile local_machine_profile() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fs::path const local = machine_profile_dir() / "local.toml";
    // Rank 0 decides whether the profile exists, so that all ranks calibrate together (a collective) or none.
    bool const have_profile = decided_by_rank_zero([&] {
                                  std::error_code error;
                                  return fs::exists(local, error) ? std::string("yes") : std::string();
                              }) == "yes";
    if (!have_profile) {
        return {measure_machine_profile(CalibrateOptions{"local", true}), "measured now (no configs/machines/local.toml)"};
    }
    return {rank == 0 ? load_machine_profile(local.string()) : MachineProfile{}, local.string()};
}

PlanRequest job_plan_request(ModelConfig const& model, int ranks, int batch, int seq, StepOptions const& run,
                             std::string const& grid_order, MachineProfile const& machine) {
    PlanRequest request;
    request.model = model;
    request.devices = ranks;
    request.batch = batch;
    request.seq = seq;
    request.machine = machine;
    request.micro_batch = run.micro_batch;
    request.run = run.model;
    request.time.order = parse_axis_order(grid_order);
    return request;
}

namespace {

// The planner's best grid for this job on `machine`, announced; none if no grid fits.
std::optional<GridShape> plan_best_grid(PlanRequest const& request, std::string const& profile_source) {
    std::vector<PlanCandidate> const plan = plan_grids(request);
    if (plan.empty() || plan.front().excluded) return std::nullopt;
    GridShape const& best = plan.front().grid;
    std::string const runner_up =
        plan.size() > 1 && !plan[1].excluded
            ? fmt::format("; next best {} at {:.4f} s", plan[1].grid.to_string(), plan[1].time.time_s)
            : "";
    fmt::print(
        "grid auto: {} — predicted {:.4f} s per step ({:.4f} s of it exposed communication){}; machine "
        "profile {}\n",
        best.to_string(), plan.front().time.time_s, plan.front().time.exposed_comm_s, runner_up, profile_source);
    return best;
}

}  // namespace

GridShape choose_grid(ModelConfig const& model, int batch, int seq, StepOptions const& run, std::string& grid_order,
                      int world) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (std::optional<GridFile> const tuned = tuned_grid_for({model.summary(), batch, seq, world})) {
        grid_order = tuned->grid_order;
        if (rank == 0) {
            fmt::print("grid auto: {} (order {}), measured fastest by `axonn tune` at {:.4f} s per step; {}\n",
                       tuned->grid.to_string(), tuned->grid_order, tuned->step_s, tuned_grid_path().string());
        }
        return tuned->grid;
    }
    LocalProfile const profile = local_machine_profile();
    std::array<int, 4> chosen = {0, 0, 0, 0};
    if (rank == 0) {
        PlanRequest const request = job_plan_request(model, world, batch, seq, run, grid_order, profile.machine);
        if (auto const best = plan_best_grid(request, profile.source)) chosen = {best->data, best->z, best->y, best->x};
    }
    MPI_Bcast(chosen.data(), static_cast<int>(chosen.size()), MPI_INT, 0, MPI_COMM_WORLD);
    if (chosen[0] == 0) {
        throw UsageError(
            fmt::format("--grid auto found no grid of {} ranks for this model and batch: run `axonn plan "
                        "--machine local --gpus {} --batch {} --seq {} --explain` to see why",
                        world, world, batch, seq));
    }
    return {chosen[0], chosen[1], chosen[2], chosen[3]};
}

bool names_grid_file(std::string const& spec) { return spec != "auto" && spec.find('=') == std::string::npos; }

fs::path tuned_grid_path() { return machine_profile_dir() / "tuned-grid.json"; }

void write_grid_file(fs::path const& path, GridFile const& file) {
    json const document = {{"format", grid_file_format},
                           {"version", grid_file_version},
                           {"grid", {{"data", file.grid.data}, {"z", file.grid.z}, {"y", file.grid.y},
                                     {"x", file.grid.x}}},
                           {"grid_order", file.grid_order},
                           {"model", file.job.model},
                           {"batch", file.job.batch},
                           {"seq", file.job.seq},
                           {"ranks", file.job.ranks},
                           {"step_s", file.step_s},
                           {"machine", file.machine},
                           {"candidates", file.candidates}};
    if (path.has_parent_path()) create_folder(path.parent_path(), "grid file folder");
    write_file_atomically(path, document.dump(2) + "\n", "grid file");
}

GridFile read_grid_file(fs::path const& path) {
    return parse_grid_file(read_input_file(path, "grid file", "pass a file written by `axonn tune`", 1 << 20), path);
}

std::optional<GridFile> tuned_grid_for(GridJob const& job) {
    fs::path const path = tuned_grid_path();
    std::string const text = decided_by_rank_zero([&] {
        std::error_code error;
        return fs::is_regular_file(path, error) ? read_input_file(path, "grid file", "", 1 << 20) : std::string();
    });
    if (text.empty()) return std::nullopt;
    GridFile file = parse_grid_file(text, path);
    if (!(file.job == job)) return std::nullopt;
    return file;
}

}  // namespace axonn
