#include "axonn/train/grid_choice.h"

#include "axonn/comm/rank_zero.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/families/registry.h"
#include "axonn/model/architecture.h"
#include "axonn/perf/calibrate.h"
#include "axonn/train/job.h"

#include <fmt/format.h>
#include <mpi.h>

#include <array>

namespace axonn {

namespace fs = std::filesystem;

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
    fs::path const local = local_profile_path();
    // Rank 0 decides whether the profile exists, so that all ranks calibrate together (a collective) or none.
    bool const have_profile = decided_by_rank_zero([&] {
                                  std::error_code error;
                                  return fs::exists(local, error) ? std::string("yes") : std::string();
                              }) == "yes";
    if (!have_profile) {
        return {measure_machine_profile(CalibrateOptions{"local", true}),
                fmt::format("measured now (no {})", local.string())};
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
        PlanRequest const job = job_plan_request(model, world, batch, seq, run, grid_order, profile.machine);
        throw UsageError(fmt::format("--grid auto found no grid of {} ranks for this model and batch: {}", world,
                                     plan_explain_advice(job, grid_order, profile)));
    }
    return {chosen[0], chosen[1], chosen[2], chosen[3]};
}

namespace {

// The plan options that give the job's model: its preset, and what the job changed of it.
std::string model_flags(ModelConfig const& model) {
    Architecture const job = model.architecture();
    Architecture const preset = model_preset(model.name()).architecture();
    std::string flags = fmt::format(" --model {}", model.name());
    auto const changed = [&](char const* option, int job_value, int preset_value) {
        if (job_value != preset_value) flags += fmt::format(" {} {}", option, job_value);
    };
    changed("--n-layer", job.layers, preset.layers);
    changed("--n-head", job.heads, preset.heads);
    changed("--n-embd", job.width, preset.width);
    changed("--context", job.context, preset.context);
    changed("--vocab", job.vocab_size, preset.vocab_size);
    return flags;
}

// The plan options that give the job's step options and axis order, where they are not train's defaults.
std::string step_flags(PlanRequest const& job, std::string const& grid_order) {
    StepOptions const defaults;
    DecoderOptions const& run = job.run;
    std::string flags;
    auto const add = [&flags](bool differs, std::string const& flag) {
        if (differs) flags += " " + flag;
    };
    add(run.overlap != defaults.model.overlap, "--overlap off");
    add(run.recompute != defaults.model.recompute, "--recompute layer");
    add(run.cache_weights, "--cache-weights");
    add(run.precision != defaults.model.precision, "--precision bf16");
    add(run.grad_scatter_comm != defaults.model.grad_scatter_comm,
        run.grad_sum_comm == DType::bf16 ? "--grad-comm bf16" : "--grad-comm bf16-scatter");
    add(run.logit_rows != defaults.model.logit_rows, fmt::format("--logit-rows {}", run.logit_rows));
    add(run.vocab_split != defaults.model.vocab_split, "--vocab-split " + vocab_split_name(run.vocab_split));
    add(job.micro_batch != defaults.micro_batch, fmt::format("--micro-batch {}", job.micro_batch));
    add(job.time.order != TimeOptions{}.order, "--grid-order " + grid_order);
    return flags;
}

}  // namespace

std::string plan_explain_advice(PlanRequest const& job, std::string const& grid_order, LocalProfile const& profile) {
    std::string const plan =
        fmt::format("axonn plan{} --machine local --gpus {} --batch {} --seq {}{} --explain", model_flags(job.model),
                    job.devices, job.batch, job.seq, step_flags(job, grid_order));
    fs::path const local = local_profile_path();
    if (profile.source == local.string()) return fmt::format("run `{}` to see why", plan);
    return fmt::format("write this machine's profile, which this command measured without writing, with `mpirun -np "
                       "{} axonn calibrate --out {}`, then run `{}` to see why",
                       job.devices, local.string(), plan);
}

fs::path tuned_grid_path() { return machine_profile_dir() / "tuned-grid.json"; }

fs::path local_profile_path() { return machine_profile_dir() / "local.toml"; }

std::vector<fs::path> grid_auto_inputs() { return {tuned_grid_path(), local_profile_path()}; }

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
