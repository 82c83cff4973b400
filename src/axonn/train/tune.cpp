#include "axonn/train/tune.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/model/model_config.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace axonn {
namespace {

// The planner's top `top` grids that fit, on rank 0; every rank gets them. Collective.
std::vector<TunedGrid> planned_grids(TuneOptions const& options, int world, LocalProfile const& profile) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::vector<int> sizes(static_cast<std::size_t>(4 * options.top), 0);
    std::vector<double> predicted(static_cast<std::size_t>(options.top), 0.0);
    if (rank == 0) {
        BenchOptions const& job = options.bench;
        PlanRequest const request =
            job_plan_request(job.model, world, job.batch, job.seq, job.run, job.grid_order, profile.machine);
        std::vector<PlanCandidate> const plan = plan_grids(request);
        int found = 0;
        for (PlanCandidate const& candidate : plan) {
            if (candidate.excluded || found == options.top) continue;
            GridShape const& g = candidate.grid;
            std::copy_n(std::array<int, 4>{g.data, g.z, g.y, g.x}.begin(), 4, sizes.begin() + 4 * found);
            predicted[static_cast<std::size_t>(found++)] = candidate.time.time_s;
        }
    }
    MPI_Bcast(sizes.data(), static_cast<int>(sizes.size()), MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(predicted.data(), static_cast<int>(predicted.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    std::vector<TunedGrid> grids;
    for (int k = 0; k < options.top && sizes[4 * k] > 0; ++k) {
        grids.push_back({{sizes[4 * k], sizes[4 * k + 1], sizes[4 * k + 2], sizes[4 * k + 3]}, predicted[k], 0.0});
    }
    return grids;
}

// The default --out holds the tuned grid of another job than `tuned`: --overwrite, the only way on that the generic
// message named, would lose it; a file of this job's own keeps both (train takes it with --grid FILE).
void require_default_out_free(std::filesystem::path const& out, GridJob const& tuned, bool overwrite) {
    std::error_code error;
    if (overwrite || out != tuned_grid_path() || !std::filesystem::is_regular_file(out, error)) return;
    GridJob job;
    try {
        job = read_grid_file(out).job;
    } catch (Error const&) {
        return;  // not a grid file: the generic check after this says that it exists
    }
    if (job == tuned) return;  // this job's own, tuned again: the generic check asks for --overwrite
    fail("{} holds the grid `axonn tune` measured for another job (batch {}, sequence {}, {} rank{} of {}), which "
         "`--grid auto` takes for that job: tune this one into a file of its own with --out FILE and train it with "
         "--grid FILE, or pass --overwrite to replace it",
         out.string(), job.batch, job.seq, job.ranks, job.ranks == 1 ? "" : "s", job.model);
}

}  // namespace

TuneResult run_tune(TuneOptions const& options) {
    int world = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::filesystem::path const out = options.grid_file();
    as_usage_errors([&] {
        AXONN_REQUIRE(options.top >= 1 && options.top <= 64, "--top must lie in [1, 64], got {}", options.top);
        options.bench.model.validate();
        AXONN_REQUIRE(options.bench.seq >= 1 && options.bench.seq <= options.bench.model.context(),
                      "--seq {} must lie in [1, the model's context {}]", options.bench.seq,
                      options.bench.model.context());
        AXONN_REQUIRE(options.bench.batch >= 1, "--batch must be at least 1, got {}", options.bench.batch);
        parse_axis_order(options.bench.grid_order);
    });
    // Before any grid is timed: an earlier file is refused at once, not after minutes of work, and so is the
    // machine profile the grids are ranked on.
    require_apart_from_models_and_data(out, "--out", TuningFile::grid_file);  // before the folder's check
    require_not_a_folder(out, "--out", "tuned-grid.json");
    GridJob const job{options.bench.model.summary(), options.bench.batch, options.bench.seq, world};
    require_default_out_free(out, job, options.overwrite);
    require_output_file(out, "--out", "grid file", options.overwrite, {local_profile_path()}, TuningFile::grid_file);
    // Made now, not when the file is written: a folder that cannot be made is found before the grids are timed.
    MadeFolder folder(out.parent_path(), "grid file folder");
    LocalProfile const profile = local_machine_profile();
    TuneResult result;
    result.profile_source = profile.source;
    result.grids = planned_grids(options, world, profile);
    if (result.grids.empty()) {
        BenchOptions const& job = options.bench;
        PlanRequest const request =
            job_plan_request(job.model, world, job.batch, job.seq, job.run, job.grid_order, profile.machine);
        throw UsageError(fmt::format("no grid of {} ranks fits this model and batch: {}", world,
                                     plan_explain_advice(request, job.grid_order, profile)));
    }
    for (TunedGrid& candidate : result.grids) {
        BenchOptions bench = options.bench;
        bench.grid = candidate.grid;
        candidate.measured_s = run_benchmark(bench).step_s;  // the slowest rank's, the same on every rank
    }
    auto const fastest = std::min_element(result.grids.begin(), result.grids.end(),
                                          [](auto const& a, auto const& b) { return a.measured_s < b.measured_s; });
    result.fastest = static_cast<std::size_t>(fastest - result.grids.begin());
    result.written = out;
    if (rank == 0) {
        GridFile file;
        file.grid = fastest->grid;
        file.grid_order = options.bench.grid_order;
        file.job = job;
        file.step_s = fastest->measured_s;
        file.machine = profile.source;
        for (TunedGrid const& candidate : result.grids) {
            file.candidates.push_back({{"grid", candidate.grid.to_string()}, {"predicted_s", candidate.predicted_s},
                                       {"measured_s", candidate.measured_s}});
        }
        write_grid_file(result.written, file, replaced_only_if(options.overwrite));
    }
    folder.keep();
    MPI_Barrier(MPI_COMM_WORLD);  // the file is there when any rank returns
    return result;
}

}  // namespace axonn
