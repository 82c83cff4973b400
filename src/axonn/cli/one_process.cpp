#include "axonn/cli/commands.h"
#include "axonn/core/error.h"

#include <mpi.h>

namespace axonn {

void require_one_process(std::string_view command) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world == 1) return;
    throw UsageError(fmt::format("`axonn {}` runs as one process, not {}: run it without mpirun or "
                                 "srun", command, world));
}

bool is_leader() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
}

}  // namespace axonn
