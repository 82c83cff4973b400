// One job, assembled the same way by every command that runs on the MPI ranks (train, bench, parity, tune,
// generate, memorization eval and study, calibrate): the backend the step options name (any: a bf16 request falls
// back to fp32 with one warning where the CPU has no bf16 GEMM), then the process grid with that backend's device
// collectives (NCCL for CUDA, none for the CPU). A command then builds its models of any family on them:
//   Job job(options.run, {options.grid, options.grid_order});
//   Decoder model(config.architecture(), job.backend(), job.grid(), job.pass_batch(B), T, options.run.model);
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/kernels/backend.h"
#include "axonn/train/train_step.h"

#include <memory>
#include <string>

namespace axonn {

struct JobGrid {
    GridShape shape;                   // data × z × y × x; its product is the number of MPI ranks
    std::string order = "x,y,z,data";  // fastest-varying axis first
    bool debug_collectives = false;    // check every collective's signature (CommOptions)
};

class Job {
public:
    // run: the backend's name, the precision and GEMM tuning. The grid's
    // shape must have been checked against the model and the world (require_valid_grid).
    Job(StepOptions& run, JobGrid const& grid);
    Job(Job const&) = delete;
    Job& operator=(Job const&) = delete;

    Backend& backend() { return *backend_; }
    ProcessGrid& grid() { return *grid_; }
    // Rank 0 of the world: the one that prints.
    bool leader() const { return grid_->rank() == 0; }
    // The sequences a rank's model holds per pass, of a global batch of B sequences: its (data, z) replica's share,
    // or one micro-batch of it.
    int pass_batch(int B) const;

private:
    StepOptions const& run_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<ProcessGrid> grid_;
};

}  // namespace axonn
