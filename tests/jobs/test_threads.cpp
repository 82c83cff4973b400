// Ranks × threads never oversubscribe a machine's CPUs silently: a job that asks for more threads in all than the
// machine has CPUs trains, and warns once; one that fits prints no such warning.
#include "axonn/train/threads.h"
#include "jobs/job.h"

#include <string>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_threads {

using testing::JobResult;

class Threads : public testing::JobTest {
protected:
    static int warnings(JobResult const& result) {
        int count = 0;
        for (std::size_t at = 0; (at = result.stderr_text.find("oversubscribe its", at)) != std::string::npos; ++at) {
            ++count;
        }
        return count;
    }
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
}

}  // namespace test_threads
}  // namespace axonn
