// Decisions that rank 0 takes alone and every rank then shares: which file to read, when ranks that list a shared
// folder at different moments, or through different caches, must not choose differently.
#pragma once

#include "axonn/core/error.h"

#include <mpi.h>

#include <array>
#include <chrono>
#include <string>
#include <thread>

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
    // The other ranks wait asleep, testing each millisecond: a decision may take long (a GEMM rate, a checkpoint's
    // listing), and ranks spinning in MPI_Bcast meanwhile would take turns on the CPUs rank 0 needs where ranks
    // share them.
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(header.data(), 2, MPI_INT, 0, MPI_COMM_WORLD, &request);
    for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    text.resize(static_cast<std::size_t>(header[1]));
    MPI_Bcast(text.data(), header[1], MPI_CHAR, 0, MPI_COMM_WORLD);
    if (header[0] != 0) throw Error(text);
    return text;
}

}  // namespace axonn
