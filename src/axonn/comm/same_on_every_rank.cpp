#include "axonn/comm/same_on_every_rank.h"

#include "axonn/core/rng.h"

#include <mpi.h>

#include <array>
#include <cstdint>

namespace axonn {

std::optional<int> first_rank_differing_from_rank_zero(std::string_view text) {
    std::array<std::uint64_t, 2> const own = {stable_hash(text), text.size()};
    std::array<std::uint64_t, 2> rank_zeros = own;
    MPI_Bcast(rank_zeros.data(), 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return first_rank_where_false(own == rank_zeros);
}

std::optional<int> first_rank_where_false(bool holds) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int const own = holds ? size : rank;
    int first = size;
    MPI_Allreduce(&own, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == size) return std::nullopt;
    return first;
}

}  // namespace axonn
