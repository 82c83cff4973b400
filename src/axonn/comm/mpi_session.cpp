#include "axonn/comm/mpi_session.h"

#include <fcntl.h>
#include <mpi.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

constexpr char const* session_base_prefix = "axonn-mpi-";
constexpr char const* owner_lock_name = "owner.lock";  // locked by the process that made the folder, while it lives

// The owner lock of the session folder `folder`, opened (not created) and locked without waiting: none where the
// folder has no lock file yet (its process is making it) or its process holds the lock (it is alive).
FileHandle lock_of_an_abandoned_folder(fs::path const& folder) {
    FileHandle lock(::open((folder / owner_lock_name).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (lock.is_open() && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) lock.close();
    return lock;
}

// Removes this user's session folders in `temporary` whose processes died without removing them (SIGKILL, the
// out-of-memory killer, a scheduler's kill after its grace period): their owner lock is free, as the kernel
// releases a lock when its process ends however it ends. A folder of a live process, or of one still making it,
// is left alone.
void remove_abandoned_session_bases(fs::path const& temporary) {
    std::error_code error;
    for (fs::directory_iterator entries(temporary, error); !error && entries != fs::directory_iterator();
         entries.increment(error)) {
        fs::path const& folder = entries->path();
        if (!folder.filename().string().starts_with(session_base_prefix)) continue;  // before any system call
        struct stat status {};
        bool const ours = ::lstat(folder.c_str(), &status) == 0 && S_ISDIR(status.st_mode) &&
                          status.st_uid == ::geteuid();
        if (!ours) continue;
        FileHandle const lock = lock_of_an_abandoned_folder(folder);
        std::error_code ignored;
        if (lock.is_open()) fs::remove_all(folder, ignored);  // the lock held until it is gone
    }
}

// A new empty folder under the system's temporary folder for Open MPI's session files, locked by this process for
// its whole life (`owner_lock`), or an empty path where none can be made (Open MPI then uses its default and reports
// any problem itself).
fs::path new_session_base(FileHandle& owner_lock) {
    std::error_code error;
    fs::path const temporary = fs::temp_directory_path(error);
    if (error) return {};
    remove_abandoned_session_bases(temporary);
    std::string name = (temporary / (std::string(session_base_prefix) + "XXXXXX")).string();  // mkdtemp's template
    if (::mkdtemp(name.data()) == nullptr) return {};
    owner_lock = FileHandle(
        ::open((fs::path(name) / owner_lock_name).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (owner_lock.is_open()) ::flock(owner_lock.get(), LOCK_EX);
    return name;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
    ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    bool const alone = !started_by_a_launcher();
    if (alone) ::setenv("OMPI_MCA_pml", "ob1", 0);
    if (alone && std::getenv(session_base_variable) == nullptr) {
        own_session_base_ = new_session_base(owner_lock_);
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
