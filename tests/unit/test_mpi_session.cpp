// MpiSession (comm/mpi_session.h): `axonn` started without a launcher asks Open MPI for its ob1 point-to-point
// layer and never loads the cm layer (whose Omni-Path library waits about 0.2 s for hardware), unless the user
// chose the layers: then cm is considered as Open MPI would. Open MPI's own log of its component choice
// (OMPI_MCA_pml_base_verbose) shows which layers a process loaded.
#include "support/files.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_mpi_session {

// What Open MPI logs of its point-to-point layers when `axonn plan --help` runs alone with `environment` set.
// This suite's own process set OMPI_MCA_pml for itself (the same session): it and any launcher's variables are
// removed, so that the command starts as a user's shell would start it.
std::string point_to_point_log(std::string const& environment) {
    testing::TempDir dir;
    std::filesystem::path const log = dir / "stderr.txt";
    std::string const command = "env -u OMPI_MCA_pml -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_FD " +
                                environment + " OMPI_MCA_pml_base_verbose=10 " + AXONN_BUILD_DIR +
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

}  // namespace test_mpi_session
}  // namespace axonn
