// GoogleTest main of every suite: it starts MPI (alone, or under mpirun) as the `axonn` command does. Rank 0
// prints GoogleTest's usual report; every other rank prints only its own failures, tagged with its rank, so that
// the output stays readable at np 8. The exit status is non-zero when any rank failed, so that mpirun, and with it ctest, fails.
#include "axonn/comm/mpi_session.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

namespace {

class FailurePrinter : public testing::EmptyTestEventListener {
public:
    explicit FailurePrinter(int rank) : rank_(rank) {}

    // Kept here because GoogleTest calls OnTestPartResult holding the lock that current_test_info() takes.
    void OnTestStart(testing::TestInfo const& test) override {
        test_name_ = fmt::format("{}.{}", test.test_suite_name(), test.name());
    }

    void OnTestPartResult(testing::TestPartResult const& result) override {
        if (result.failed()) {
            fmt::print(stderr, "[rank {}] {} failed at {}:{}\n{}\n", rank_, test_name_,
                       result.file_name() ? result.file_name() : "?", result.line_number(), result.message());
        }
    }

private:
    int rank_;
    std::string test_name_;
};

}  // namespace

int main(int argc, char** argv) {
    axonn::MpiSession const mpi(argc, argv);
    // After MPI_Init: the parameterised suites ask for the world size when GoogleTest registers them here.
    testing::InitGoogleTest(&argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) {
        testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new FailurePrinter(rank));
    }
    int const failed = RUN_ALL_TESTS() == 0 ? 0 : 1;
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any_failed && !failed) {
        fmt::print(stderr, "another rank failed: see its [rank N] lines above\n");
    }
    return any_failed;
}
