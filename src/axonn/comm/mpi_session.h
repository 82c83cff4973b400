// MPI for the whole life of a process: the `axonn` command's and every test suite's. Initialised with
// MPI_THREAD_MULTIPLE, for the thread that progresses non-blocking collectives (comm/progress.h), so that the
// same binary runs alone or under mpirun or srun.
#pragma once

#include "axonn/core/file_io.h"

#include <filesystem>

namespace axonn {

class MpiSession {
public:
    // A process started without a launcher initialises Open MPI on its own instead of first starting Open MPI's
    // daemon for it: 0.27 s instead of 0.43 s for each command run alone on a 2-core machine. The daemon would
    // serve only spawning or connecting to other processes, which axonn never does. The processes of mpirun or
    // srun are not affected, and a value the user set (OMPI_MCA_ess_singleton_isolated) is kept.
    // Such a process also takes Open MPI's ob1 point-to-point layer (OMPI_MCA_pml, unless the user set it) without
    // trying the cm layer first: it has no peers to reach over a fabric, and loading cm's Omni-Path library (PSM2)
    // waits about 0.2 s for hardware, most machines having none: `axonn plan --help` alone 0.26 s → 0.06 s.
    // Such a process also keeps Open MPI's session files in a folder of its own (OMPI_MCA_orte_tmpdir_base, unless
    // the user set it), removed at the end: Open MPI gives every process that starts alone the same job id, so they
    // all shared one session folder (/tmp/ompi.HOST.UID/jf.0/1), and two starting or ending at once raced on it,
    // one failing to start ("A call to mkdir was unable to create the desired directory ... File exists": 2 of 240
    // `axonn --help` run four at a time on 2 cores). The folder of a process killed before its end (SIGKILL) is
    // removed by the next such process of the same user on the machine: each folder holds a lock its process keeps.
    MpiSession(int& argc, char**& argv);
    ~MpiSession();
    MpiSession(MpiSession const&) = delete;
    MpiSession& operator=(MpiSession const&) = delete;

private:
    std::filesystem::path own_session_base_;  // empty where Open MPI chooses the session folder
    FileHandle owner_lock_;                    // the folder's lock, held while this process lives
};

}  // namespace axonn
