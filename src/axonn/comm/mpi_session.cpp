#include "axonn/comm/mpi_session.h"

#include <mpi.h>

#include <cstdlib>

namespace axonn {
namespace {

// Whether mpirun or srun started this process: Open MPI's launcher or a PMI sets these for every rank.
bool started_by_a_launcher() {
    for (char const* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_FD"}) {
        if (std::getenv(name) != nullptr) return true;
    }
    return false;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
    ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    if (!started_by_a_launcher()) ::setenv("OMPI_MCA_pml", "ob1", 0);
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

}  // namespace axonn
