#include "axonn/comm/same_on_every_rank.h"

#include "axonn/core/rng.h"

#include <mpi.h>

#include <array>
#include <cstdint>

namespace axonn {

std::optional<int> first_rank_differing_from_rank_zero(std::string_view text) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::array<std::uint64_t, 2> const own = {stable_hash(text), text.size()};
    std::array<std::uint64_t, 2> rank_zeros = own;
    MPI_Bcast(rank_zeros.data(), 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int const differing = own == rank_zeros ? size : rank;
    int first = size;
    MPI_Allreduce(&differing, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == size) return std::nullopt;
    return first;
}

}  // namespace axonn
