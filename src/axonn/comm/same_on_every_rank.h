// Whether every rank of a job holds the same value, or sees the same thing, where ranks that differ would fail
// apart: a job whose ranks were given other command lines (an MPMD launch, `mpirun -np 1 axonn train A : -np 1
// axonn train B`) built other models and grids, and waited on each other's collectives forever or crashed; a rank
// that cannot see the checkpoint folder fails at the first save, after the training.
#pragma once

#include <optional>
#include <string_view>

namespace axonn {

// The lowest rank whose `text` differs from rank 0's, or none where every rank holds rank 0's. Collective over
// MPI_COMM_WORLD (a hash and a length travel, not the text).
std::optional<int> first_rank_differing_from_rank_zero(std::string_view text);

// The lowest rank where `holds` is false, or none where it holds on every rank. Collective over MPI_COMM_WORLD.
std::optional<int> first_rank_where_false(bool holds);

}  // namespace axonn
