// MpiSession (comm/mpi_session.h): `axonn` started without a launcher asks Open MPI for its ob1 point-to-point
// layer and never loads the cm layer (whose Omni-Path library waits about 0.2 s for hardware), unless the user
// chose the layers: then cm is considered as Open MPI would. Open MPI's own log of its component choice
// (OMPI_MCA_pml_base_verbose) shows which layers a process loaded. Every such process keeps Open MPI's session
// files in a folder of its own, which it removes at the end (or, where it was killed, the next such process does).
#include "support/files.h"
#include "support/temp_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_mpi_session {

// The start of a command line that runs a command as a user's shell would, without the variables of a launcher
// (this suite itself may run under mpirun).
std::string const without_a_launcher = "env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_FD ";

// What Open MPI logs of its point-to-point layers when `axonn plan --help` runs alone with `environment` set.
// This suite's own process set OMPI_MCA_pml for itself (the same session): it and any launcher's variables are
// removed, so that the command starts as a user's shell would start it.
std::string point_to_point_log(std::string const& environment) {
    testing::TempDir dir;
    std::filesystem::path const log = dir / "stderr.txt";
    std::string const command = without_a_launcher + "-u OMPI_MCA_pml " + environment +
                                " OMPI_MCA_pml_base_verbose=10 " + AXONN_BUILD_DIR +
                                "/axonn plan --help > /dev/null 2> " + log.string();
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return testing::file_bytes(log);
}

TEST(MpiSession, AProcessAloneLoadsOnlyTheOb1Layer) {
    std::string const log = point_to_point_log("");
    EXPECT_NE(log.find("found loaded component ob1"), std::string::npos) << log;
    EXPECT_EQ(log.find("found loaded component cm"), std::string::npos) << log;
}

TEST(MpiSession, TheUsersChoiceOfLayersIsKept) {
    // Every layer but UCX, as Debian's own default excludes it: cm is then loaded and tried.
    std::string const log = point_to_point_log("OMPI_MCA_pml=^ucx");
    EXPECT_NE(log.find("found loaded component cm"), std::string::npos) << log;
}

// The folders in `dir` that hold a session of Open MPI (an `ompi.*` folder inside).
std::vector<std::filesystem::path> session_folders(std::filesystem::path const& dir) {
    std::vector<std::filesystem::path> folders;
    for (auto const& entry : std::filesystem::directory_iterator(dir)) {
        if (!entry.is_directory()) continue;
        for (auto const& inner : std::filesystem::directory_iterator(entry.path())) {
            if (inner.path().filename().string().starts_with("ompi.")) folders.push_back(entry.path());
        }
    }
    return folders;
}

// Whether a process holds the lock of the file `lock_file` (one that exists).
bool locked(std::filesystem::path const& lock_file) {
    int const lock = ::open(lock_file.c_str(), O_RDWR | O_CLOEXEC);
    bool const held = lock >= 0 && ::flock(lock, LOCK_EX | LOCK_NB) != 0;
    if (lock >= 0) ::close(lock);  // closing releases a lock taken here
    return held;
}

// Open MPI gives every process that starts alone the same job id: with one session folder for all, two starting or
// ending at once raced on it and one failed to start now and then. Two `axonn tokenize` reading standard input stay
// alive side by side, with TMPDIR at an empty folder: each holds a session in a folder of its own there (where one
// shared folder, ompi.HOST.UID, was), and the folder is empty again once both have ended.
TEST(MpiSession, EveryProcessAloneHasASessionFolderOfItsOwn) {
    using namespace std::chrono_literals;
    testing::TempDir const dir;
    std::string const command = without_a_launcher + "-u OMPI_MCA_orte_tmpdir_base TMPDIR=" + dir.path().string() +
                                " " + AXONN_BUILD_DIR + "/axonn tokenize --tokenizer byte > /dev/null";
    FILE* const first = ::popen(command.c_str(), "w");
    FILE* const second = ::popen(command.c_str(), "w");
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    std::vector<std::filesystem::path> folders;
    for (auto const start = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - start < 30s;) {
        folders = session_folders(dir.path());
        if (folders.size() == 2) break;
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(folders.size(), 2u) << "session folders in " << dir.path();
    for (FILE* const input : {first, second}) {
        std::fputs("hi", input);
        int const status = ::pclose(input);  // standard input ends: the command prints the ids and exits
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << dir.path() << " keeps a session folder";
}

// A process killed with SIGKILL cannot remove its session folder: the next process alone of the same user removes
// it (its owner lock is free once the killed process is gone), and leaves a folder whose process is still making it
// (no lock file yet). Before, every killed run left an axonn-mpi-* folder in /tmp for good.
TEST(MpiSession, AKilledProcesssFolderIsRemovedByTheNextProcess) {
    using namespace std::chrono_literals;
    testing::TempDir const dir;
    std::filesystem::create_directory(dir / "axonn-mpi-making");  // as between mkdtemp and the lock's creation
    std::string const environment = without_a_launcher + "-u OMPI_MCA_orte_tmpdir_base TMPDIR=" + dir.path().string();
    // tokenize waits for the end of its standard input, a FIFO it holds open for writing itself (`<>`: the open
    // does not wait for a writer); the shell prints its process id.
    std::filesystem::path const fifo = dir / "input";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string const start = environment + " " + AXONN_BUILD_DIR + "/axonn tokenize --tokenizer byte <> " +
                              fifo.string() + " > /dev/null 2>&1 & echo $!";
    FILE* const shell = ::popen(start.c_str(), "r");
    ASSERT_NE(shell, nullptr);
    int pid = 0;
    ASSERT_EQ(std::fscanf(shell, "%d", &pid), 1);
    ::pclose(shell);
    std::vector<std::filesystem::path> folders;
    for (auto const begin = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - begin < 30s;) {
        folders = session_folders(dir.path());
        if (!folders.empty() && locked(folders.front() / "owner.lock")) break;
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_EQ(folders.size(), 1u) << "no session folder in " << dir.path();
    ASSERT_TRUE(locked(folders.front() / "owner.lock")) << folders.front();
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    for (auto const begin = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - begin < 30s;) {
        if (!locked(folders.front() / "owner.lock")) break;
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(std::filesystem::exists(folders.front())) << "the killed process removed its folder";

    std::string const next = environment + " " + AXONN_BUILD_DIR + "/axonn plan --help > /dev/null";
    ASSERT_EQ(std::system(next.c_str()), 0) << next;
    EXPECT_FALSE(std::filesystem::exists(folders.front())) << "the killed process's folder is still there";
    EXPECT_TRUE(std::filesystem::exists(dir / "axonn-mpi-making")) << "a folder being made was removed";
    std::filesystem::remove(fifo);
}

}  // namespace test_mpi_session
}  // namespace axonn
