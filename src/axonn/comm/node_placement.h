// Where a job's ranks run: how many nodes, how many ranks on each, and whether the node-local rank that the
// launcher exported (what a GPU run picks its device by) is each rank's place among the ranks that share its node,
// as MPI sees them. A launcher that exports something else (a job script that sets SLURM_LOCALID itself, mpirun
// started inside an srun step) would put two ranks on one GPU; the banner says so.
#pragma once

#include <mpi.h>

#include <string>

namespace axonn {

struct NodePlacement {
    int nodes = 1;
    int most_ranks_per_node = 1;
    int node_rank = 0;              // this rank's place on its node, as MPI sees it
    int node_ranks = 1;             // the ranks on this rank's node
    std::string launcher_variable;  // where every rank read its node-local rank ("" where none was set on rank 0)
    int disagreeing_ranks = 0;      // ranks whose launcher's node-local rank differs from MPI's (or is missing)
};

// Collective over MPI_COMM_WORLD.
NodePlacement node_placement();

int cpu_count();  // this machine's online CPUs

// Whether the ranks of `world` on this rank's node number no more than its CPUs. Collective over `world`.
bool node_has_a_cpu_per_rank(MPI_Comm world);

// One line: "2 node(s) x 4 rank(s), node-local ranks from SLURM_LOCALID", and what disagrees.
std::string placement_summary(NodePlacement const& placement);

}  // namespace axonn
