// Denormal numbers are flushed on every thread the CPU backend computes on (core/float_environment.h): once a
// backend is made, each thread of an OpenMP team of any size has FTZ and DAZ set and computes as they say (a
// denormal input reads as zero, a result that would be denormal is zero), and a GEMM on denormal operands, run
// on several threads, returns exact zeros. The last test clears the flags and sees gradual underflow come back,
// so the behavioural checks can fail.
#include "axonn/core/float_environment.h"
#include "axonn/kernels/cpu_backend.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <vector>

namespace axonn {
namespace {

constexpr float denormal = 1e-39f;  // below fp32's smallest normal number, 1.18e-38

// Whether the calling thread has both controls set and acts on them. volatile keeps the compiler from folding
// the products: the CPU computes them under the thread's own control word.
bool flushes_here() {
    volatile float tiny = denormal, one = 1.0f, small = 1e-30f, smaller = 1e-10f;
    bool const reads_zero = tiny * one == 0.0f;        // DAZ
    bool const writes_zero = small * smaller == 0.0f;  // FTZ: 1e-40 would be denormal
    return denormals_flushed_on_this_thread() && reads_zero && writes_zero;
}

// How many threads of a team of `threads` flush (the caller's included).
int flushing_threads(int threads) {
    int flushing = 0;
#pragma omp parallel num_threads(threads) reduction(+ : flushing)
    flushing += flushes_here() ? 1 : 0;
    return flushing;
}

// Each test sets OpenMP's team size and the flags for its own checks, and gives both back: the process's other
// suites (the whole binary in one process) run on the threads they started with, flushing or not as before.
class DenormalFlushing : public ::testing::Test {
protected:
    void TearDown() override {
        omp_set_num_threads(threads_);
        flush_denormals(flushing_);
    }

private:
    int threads_ = omp_get_max_threads();
    bool flushing_ = denormals_flushed_on_this_thread();
};

TEST_F(DenormalFlushing, EveryThreadOfAnyTeamFlushesOnceABackendIsMade) {
    // As a process starts: gradual underflow everywhere, on the team of 2 the backend will be made with (set first:
    // flush_denormals reaches the team a parallel region gets now, whatever size earlier tests left).
    omp_set_num_threads(2);
    flush_denormals(false);
    ASSERT_EQ(flushing_threads(2), 0);
    CpuBackend const backend;
    // Teams as large as, smaller than and larger than the one at the backend's making: the added threads
    // inherit the control word from the thread that makes them.
    for (int const threads : {2, 1, 3, 5}) {
        EXPECT_EQ(flushing_threads(threads), threads) << "in a team of " << threads;
    }
}

TEST_F(DenormalFlushing, AGemmOnDenormalOperandsIsZeroOnEveryThread) {
    CpuBackend backend;
    omp_set_num_threads(3);
    constexpr std::int64_t M = 64, K = 48, N = 40;
    // inp[M,K] denormal, weight[N,K] ones: read as they are, each output would be their sum, 4.8e-38.
    std::vector<float> inp(M * K, denormal), weight(N * K, 1.0f), out(M * N, -1.0f);
    backend.linear_forward(out.data(), inp.data(), {weight.data(), DType::f32}, nullptr, M, K, N);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 0.0f; }));
}

// The team of 3 is set first: flush_denormals reaches the team a parallel region gets now, and the threads of a
// larger team an earlier test ran stay as they were (core/float_environment.h).
TEST_F(DenormalFlushing, ClearingTheFlagsBringsDenormalsBack) {
    omp_set_num_threads(3);
    CpuBackend const backend;
    flush_denormals(false);
    EXPECT_EQ(flushing_threads(3), 0);
    volatile float tiny = denormal, one = 1.0f;
    EXPECT_EQ(tiny * one, denormal);
    flush_denormals(true);
    EXPECT_EQ(flushing_threads(3), 3);
}

}  // namespace
}  // namespace axonn
