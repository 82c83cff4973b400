#include "axonn/comm/mpi_session.h"

#include <mpi.h>

#include <cstdlib>
#include <string>
#include <system_error>

namespace axonn {
namespace {

namespace fs = std::filesystem;

constexpr char const* session_base_variable = "OMPI_MCA_orte_tmpdir_base";

// Whether mpirun or srun started this process: Open MPI's launcher or a PMI sets these for every rank.
bool started_by_a_launcher() {
    for (char const* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_FD"}) {
        if (std::getenv(name) != nullptr) return true;
    }
    return false;
}

// A new empty folder under the system's temporary folder for Open MPI's session files, or an empty path where none
// can be made (Open MPI then uses its default and reports any problem itself).
fs::path new_session_base() {
    std::error_code error;
    fs::path const temporary = fs::temp_directory_path(error);
    if (error) return {};
    std::string name = (temporary / "axonn-mpi-XXXXXX").string();  // mkdtemp puts a unique name in place of the Xs
    if (::mkdtemp(name.data()) == nullptr) return {};
    return name;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
    ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    bool const alone = !started_by_a_launcher();
    if (alone) ::setenv("OMPI_MCA_pml", "ob1", 0);
    if (alone && std::getenv(session_base_variable) == nullptr) {
        own_session_base_ = new_session_base();
        if (!own_session_base_.empty()) ::setenv(session_base_variable, own_session_base_.c_str(), 1);
    }
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    // Read by MPI_Init alone: the processes this one starts (mpirun, another axonn) choose their own.
    if (!own_session_base_.empty()) ::unsetenv(session_base_variable);
}

MpiSession::~MpiSession() {
    MPI_Finalize();
    std::error_code ignored;
    if (!own_session_base_.empty()) fs::remove_all(own_session_base_, ignored);
}

}  // namespace axonn
