#include "axonn/train/job.h"

#include "axonn/parallel/device_communication.h"

#include <mpi.h>

namespace axonn {
namespace {

bool world_leader() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
}

}  // namespace

Job::Job(StepOptions& run, JobGrid const& grid)
    : run_(run), backend_(make_step_backend(run, world_leader())),
      grid_(std::make_unique<ProcessGrid>(
          MPI_COMM_WORLD, grid.shape, parse_axis_order(grid.order),
          CommOptions{.debug_collectives = grid.debug_collectives, .device = device_communication(*backend_)})) {}

int Job::pass_batch(int B) const { return run_.pass_batch(B / grid_->shape().batch_replicas()); }

}  // namespace axonn
