#include "axonn/comm/node_placement.h"

#include "axonn/core/error.h"
#include "axonn/core/launcher.h"

#include <fmt/format.h>
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <utility>

namespace axonn {

namespace {

// This rank's place among the ranks of `world` that share its node (MPI's shared-memory group), and their number.
// Collective over `world`.
std::pair<int, int> rank_and_size_on_node(MPI_Comm world) {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    std::pair<int, int> place;
    MPI_Comm_rank(node, &place.first);
    MPI_Comm_size(node, &place.second);
    MPI_Comm_free(&node);
    return place;
}

}  // namespace

int cpu_count() { return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }

bool node_has_a_cpu_per_rank(MPI_Comm world) { return rank_and_size_on_node(world).second <= cpu_count(); }

NodePlacement node_placement() {
    NodePlacement placement;
    std::tie(placement.node_rank, placement.node_ranks) = rank_and_size_on_node(MPI_COMM_WORLD);

    std::optional<LauncherLocalRank> launcher;
    try {
        launcher = launcher_local_rank();
    } catch (Error const&) {  // not a rank: counted as wrong below, never thrown on some ranks only
    }
    if (launcher) placement.launcher_variable = launcher->variable;
    // Summed over the world: node leaders (one per node), ranks whose launcher disagrees; the most ranks per node.
    std::array<int, 2> counts = {placement.node_rank == 0 ? 1 : 0,
                                 launcher && launcher->rank == placement.node_rank ? 0 : 1};
    MPI_Allreduce(MPI_IN_PLACE, counts.data(), 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    placement.nodes = counts[0];
    placement.disagreeing_ranks = counts[1];
    placement.most_ranks_per_node = placement.node_ranks;
    MPI_Allreduce(MPI_IN_PLACE, &placement.most_ranks_per_node, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return placement;
}

std::string placement_summary(NodePlacement const& placement) {
    std::string text = fmt::format("{} node(s) x {} rank(s)", placement.nodes, placement.most_ranks_per_node);
    if (placement.launcher_variable.empty()) {
        if (placement.nodes * placement.most_ranks_per_node > 1) {
            text += ", no launcher's node-local rank (a GPU run would put every rank on its node's first GPU)";
        }
        return text;
    }
    text += ", node-local ranks from " + placement.launcher_variable;
    if (placement.disagreeing_ranks > 0) {
        text += fmt::format(
            " (wrong on {} rank(s): a GPU run would share GPUs; launch with mpirun or srun, "
            "not with a variable of your own)",
            placement.disagreeing_ranks);
    }
    return text;
}

}  // namespace axonn
