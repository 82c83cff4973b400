// How an error on one rank ends a job of many (docs/ARCHITECTURE.md, "Errors").
//
// A rank that fails cannot know whether the others failed too: every rank rejects a bad flag at once, but only
// one may find its data missing (a file visible to one node) or its disk full, while the rest wait for it in a
// collective that will never complete. So a failing rank first waits a short while for every other rank to fail
// as well, on a communicator of its own that no collective of the program uses:
//   - all ranks failed, with the same message: rank 0 prints it once and every rank exits with the status;
//   - all failed, with different messages: each prints its own, prefixed with its rank;
//   - some did not fail in time: this rank prints its message, prefixed with its rank, and ends the whole job
//     with MPI_Abort and the status (mpirun and srun exit with it).
// A job of one rank prints the message and exits; nothing waits.
#pragma once

#include <mpi.h>

#include <string_view>

namespace axonn {

class JobErrors {
public:
    // Collective over MPI_COMM_WORLD: every rank constructs it once, right after MPI_Init.
    JobErrors();
    ~JobErrors();
    JobErrors(JobErrors const&) = delete;
    JobErrors& operator=(JobErrors const&) = delete;

    // Reports "axonn: <kind>: <message>" as described above and returns the status to exit with, unless it
    // aborts the job. Never throws: a failed write to stderr (a full disk, a closed pipe) is ignored.
    [[nodiscard]] int end_job(std::string_view kind, std::string_view message, int status) noexcept;

private:
    // Whether every rank reached end_job within the agreement window.
    bool all_ranks_failed() noexcept;
    // Whether every rank failed with the same message and status.
    bool same_failure_everywhere(std::string_view message, int status) noexcept;

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    int size_ = 1;
};

// Writes `line` and a newline to stderr with one write(2) call, ignoring failures: for the paths that report an
// error, where nothing may throw.
void write_stderr_line(std::string_view line) noexcept;

}  // namespace axonn
