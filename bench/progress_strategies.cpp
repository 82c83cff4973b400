// How to make a non-blocking collective progress while a rank computes: OpenMPI 4.1 advances one only inside
// MPI calls. Measures, for an all-reduce issued before a stretch of GEMMs and waited on after them, how much of
// the collective's time stays exposed under three strategies:
//   none    nothing between issue and wait
//   poll    MPI_Test after every GEMM ("between kernels")
//   thread  a helper thread calls MPI_Test on the request every --interval-us (100) until it completes
//           (MPI_THREAD_MULTIPLE); the rank then waits for the helper instead of calling MPI_Wait
// Run: mpirun -np 2 build/bench/progress_strategies [--mib 4] [--gemms 20] [--gemm-size 512] [--interval-us 100]
// (and inside scripts/slow-network for a slow link). Prints one Markdown row per strategy. This is raw MPI on
// purpose: it measures the transport that the communication layer is built on.
#include "axonn/kernels/cpu/gemm.h"

#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Settings {
    std::size_t floats = std::size_t{1} << 20;  // 4 MiB
    int gemms = 20;
    int gemm_size = 512;
    int repeats = 5;
    int interval_us = 100;  // the helper thread's sleep between MPI calls
};

Settings parse(int argc, char** argv) {
    Settings settings;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string const flag = argv[i];
        int const value = std::atoi(argv[i + 1]);
        if (flag == "--mib") settings.floats = static_cast<std::size_t>(value) << 18;
        if (flag == "--gemms") settings.gemms = value;
        if (flag == "--gemm-size") settings.gemm_size = value;
        if (flag == "--repeats") settings.repeats = value;
        if (flag == "--interval-us") settings.interval_us = value;
    }
    return settings;
}

class Gemms {
public:
    explicit Gemms(int n) : n_(n), a_(n * n, 0.5f), b_(n * n, 0.25f), c_(n * n) {}
    void one() { axonn::cpu::gemm<float>(false, true, n_, n_, n_, 1.0f, a_.data(), n_, b_.data(), n_, 0.0f, c_.data(), n_); }

private:
    int n_;
    std::vector<float> a_, b_, c_;
};

struct Timing {
    double total = 0, wait = 0;
};

enum class Strategy { none, poll, thread };

// One overlapped step: issue, compute, wait.
Timing overlapped(Strategy strategy, Settings const& s, Gemms& gemms, std::vector<float>& buffer) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto const start = Clock::now();
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &request);
    std::thread helper;
    if (strategy == Strategy::thread) {
        // The helper owns the request until it completes: the rank waits for the helper, not on the request.
        helper = std::thread([&] {
            for (int done = 0; !done;) {
                MPI_Test(&request, &done, MPI_STATUS_IGNORE);
                if (!done) std::this_thread::sleep_for(std::chrono::microseconds(s.interval_us));
            }
        });
    }
    for (int g = 0; g < s.gemms; ++g) {
        gemms.one();
        if (strategy == Strategy::poll) {
            int done = 0;
            MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        }
    }
    auto const wait_start = Clock::now();
    if (helper.joinable()) {
        helper.join();
    } else {
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    Timing timing{seconds_since(start), seconds_since(wait_start)};
    return timing;
}

double compute_alone(Settings const& s, Gemms& gemms) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto const start = Clock::now();
    for (int g = 0; g < s.gemms; ++g) gemms.one();
    return seconds_since(start);
}

double communication_alone(std::vector<float>& buffer) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto const start = Clock::now();
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    return seconds_since(start);
}

// The slowest rank's value: a step is as slow as its slowest rank.
double slowest(double value) {
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return value;
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    Settings const s = parse(argc, argv);
    Gemms gemms(s.gemm_size);
    std::vector<float> buffer(s.floats, 1.0f);
    for (int i = 0; i < 2; ++i) {  // warm-up: first touch, JIT, connections
        compute_alone(s, gemms);
        communication_alone(buffer);
    }
    double compute = 1e30, comm = 1e30;
    for (int r = 0; r < s.repeats; ++r) {
        compute = std::min(compute, slowest(compute_alone(s, gemms)));
        comm = std::min(comm, slowest(communication_alone(buffer)));
    }
    if (rank == 0) {
        fmt::print("ranks {} | thread level {} | all-reduce {:.1f} MiB alone {:.1f} ms | {} GEMMs of {}^3 alone {:.1f} ms\n",
                   world, provided == MPI_THREAD_MULTIPLE ? "multiple" : "lower", s.floats * 4 / 1048576.0,
                   comm * 1e3, s.gemms, s.gemm_size, compute * 1e3);
        fmt::print("| strategy | step ms | exposed wait ms | hidden | step / (compute + comm) |\n|---|---|---|---|---|\n");
    }
    for (Strategy strategy : {Strategy::none, Strategy::poll, Strategy::thread}) {
        Timing best{1e30, 1e30};
        for (int r = 0; r < s.repeats; ++r) {
            Timing const t = overlapped(strategy, s, gemms, buffer);
            double const total = slowest(t.total), wait = slowest(t.wait);
            if (total < best.total) best = {total, wait};
        }
        if (rank == 0) {
            char const* name = strategy == Strategy::none ? "none" : strategy == Strategy::poll ? "poll" : "thread";
            fmt::print("| {} | {:.1f} | {:.1f} | {:.0f}% | {:.2f} |\n", name, best.total * 1e3, best.wait * 1e3,
                       100.0 * std::max(0.0, 1.0 - best.wait / comm), best.total / (compute + comm));
        }
    }
    MPI_Finalize();
}
