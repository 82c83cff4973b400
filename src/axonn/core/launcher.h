// The node-local rank that a launcher exports to each process it starts: the one number a rank has, before MPI
// starts, of its place on its node (a GPU run takes its device from it).
#pragma once

#include <optional>
#include <string>

namespace axonn {

struct LauncherLocalRank {
    std::string variable;  // the variable it came from, such as "SLURM_LOCALID"
    int rank;
};

// The first of OMPI_COMM_WORLD_LOCAL_RANK (mpirun), SLURM_LOCALID (srun) and MPI_LOCALRANKID (MPICH, Intel MPI)
// that is set; none where the process was started alone. mpirun comes first: inside a Slurm job the batch shell's
// own SLURM_LOCALID (0) reaches the ranks mpirun starts. A value that is not a rank is an axonn::Error naming it.
std::optional<LauncherLocalRank> launcher_local_rank();

}  // namespace axonn
