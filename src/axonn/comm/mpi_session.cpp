#include "axonn/comm/mpi_session.h"

#include <mpi.h>

#include <cstdlib>

namespace axonn {

MpiSession::MpiSession(int& argc, char**& argv) {
    ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

}  // namespace axonn
