// Decisions that rank 0 takes alone and every rank then shares: which file to read, when ranks that list a shared
// folder at different moments, or through different caches, must not choose differently.
#pragma once

#include "axonn/core/error.h"

#include <mpi.h>

#include <array>
#include <string>

namespace axonn {

// What rank 0's `decide()` returns (a path, a file's text, "" for none), on every rank of MPI_COMM_WORLD. An
// axonn::Error on rank 0 is thrown on every rank. Collective.
template <typename Decide>
std::string decided_by_rank_zero(Decide&& decide) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string text;
    int failed = 0;
    if (rank == 0) {
        try {
            text = decide();
        } catch (Error const& e) {
            text = e.what();
            failed = 1;
        }
    }
    std::array<int, 2> header = {failed, static_cast<int>(text.size())};
    MPI_Bcast(header.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
    text.resize(static_cast<std::size_t>(header[1]));
    MPI_Bcast(text.data(), header[1], MPI_CHAR, 0, MPI_COMM_WORLD);
    if (header[0] != 0) throw Error(text);
    return text;
}

}  // namespace axonn
