#include "axonn/core/launcher.h"

#include "axonn/core/error.h"

#include <cstdlib>
#include <exception>

namespace axonn {

std::optional<LauncherLocalRank> launcher_local_rank() {
    for (char const* variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
        char const* value = std::getenv(variable);
        if (value == nullptr) continue;
        std::size_t used = 0;
        int rank = -1;
        try {
            rank = std::stoi(value, &used);
        } catch (std::exception const&) {
        }
        AXONN_REQUIRE(rank >= 0 && value[used] == '\0',
                      "{}='{}' is not a node-local rank: unset it, or launch with mpirun or srun", variable, value);
        return LauncherLocalRank{variable, rank};
    }
    return std::nullopt;
}

}  // namespace axonn
