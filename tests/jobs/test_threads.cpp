// Ranks × threads never oversubscribe a machine's CPUs silently: a job that asks for more threads in all than the
// machine has CPUs trains, and warns once; so does a rank that mpirun bound to fewer CPUs than its threads (its
// default for 2 ranks or fewer); a job that fits prints neither warning.
#include "axonn/train/threads.h"
#include "jobs/job.h"

#include <string>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_threads {

using testing::JobResult;

class Threads : public testing::JobTest {
protected:
    static int warnings(JobResult const& result, std::string const& warning = "oversubscribe its") {
        int count = 0;
        for (std::size_t at = 0; (at = result.stderr_text.find(warning, at)) != std::string::npos; ++at) {
            ++count;
        }
        return count;
    }
    static constexpr char const* bound_warning = "on a rank bound to";
};

TEST_F(Threads, OversubscribedRanksTimesThreadsWarnOnce) {
    // Two ranks with every CPU each: twice what the machine has.
    std::string const threads = std::to_string(cpu_count());
    JobResult const result = mpirun("-np 2 " + train("--grid data=2 --steps 2 --threads " + threads));
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_EQ(warnings(result), 1) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("2 rank(s) x " + threads + " thread(s)"), std::string::npos)
        << result.stderr_text;
}

TEST_F(Threads, AJobWithinTheCpusDoesNotWarn) {
    JobResult const result = mpirun("-np 1 " + train("--steps 2 --threads 1"));
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_EQ(warnings(result), 0) << result.stderr_text;
    EXPECT_EQ(warnings(result, bound_warning), 0) << result.stderr_text;
}

// The suite's own launches: every variable of the tests' job environment (tests/CMakeLists.txt) reaches the ranks,
// and one rank is not bound to one core (mpirun's default for 2 ranks or fewer), so two one-rank tests side by side
// do not share a core.
TEST_F(Threads, JobsGetTheWholeTestEnvironmentAndNoBinding) {
    JobResult const result = mpirun("-np 1 sh -c 'env; grep Cpus_allowed_list /proc/self/status'");
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    std::string const printed = testing::file_bytes(dir_ / "stdout.txt");
    for (char const* variable : {"OMPI_MCA_pml=ob1\n", "OMPI_MCA_hwloc_base_binding_policy=none\n",
                                 "AXONN_GEMM_RATE=100\n"}) {
        EXPECT_NE(printed.find(variable), std::string::npos) << variable << " missing from:\n" << printed;
    }
    // The rank may run where the test itself may.
    std::string const status = testing::file_bytes("/proc/self/status");
    std::size_t const line = status.find("Cpus_allowed_list:");
    ASSERT_NE(line, std::string::npos) << status;
    std::string const allowed = status.substr(line, status.find('\n', line) + 1 - line);
    EXPECT_NE(printed.find(allowed), std::string::npos) << "this process: " << allowed << "the rank:\n" << printed;
}

TEST_F(Threads, ARankBoundToFewerCpusThanItsThreadsWarnsOnce) {
    if (cpu_count() < 2) GTEST_SKIP() << "needs 2 CPUs: one rank bound to one core, running 2 threads";
    JobResult const bound = mpirun("--bind-to core -np 1 " + train("--steps 2 --threads 2"));
    EXPECT_EQ(bound.exit_status, 0) << bound.stderr_text;
    EXPECT_EQ(warnings(bound, bound_warning), 1) << bound.stderr_text;
    EXPECT_NE(bound.stderr_text.find("--threads 2 on a rank bound to 1 CPU(s)"), std::string::npos)
        << bound.stderr_text;
    EXPECT_NE(bound.stderr_text.find("mpirun --bind-to none"), std::string::npos) << bound.stderr_text;
    // Unbound, the same job may use every CPU: no warning.
    JobResult const unbound = mpirun("--bind-to none -np 1 " + train("--steps 2 --threads 2"));
    EXPECT_EQ(unbound.exit_status, 0) << unbound.stderr_text;
    EXPECT_EQ(warnings(unbound, bound_warning), 0) << unbound.stderr_text;
}

}  // namespace test_threads
}  // namespace axonn
