#include "axonn/comm/job_errors.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace axonn {
namespace {

// How long a failing rank waits for the others to fail too. Ranks that check the same thing fail within
// milliseconds of each other, even oversubscribed; a rank that is still training after this will not fail.
constexpr auto agreement_window = std::chrono::seconds(3);
constexpr auto failure_poll_interval = std::chrono::milliseconds(1);

// FNV-1a: the same text gives the same number on every rank, whatever the platform.
std::uint64_t fingerprint(std::string_view message, int status) {
    std::uint64_t hash = 14695981039346656037ull ^ static_cast<std::uint64_t>(status);
    for (char c : message) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ull;
    }
    return hash;
}

// "axonn: error: message", or "[rank 3] axonn: error: message" when other ranks print too.
void print_report(std::string_view kind, std::string_view message, int rank, bool with_rank) noexcept {
    try {
        std::string const prefix = with_rank ? fmt::format("[rank {}] ", rank) : std::string();
        write_stderr_line(fmt::format("{}axonn: {}: {}", prefix, kind, message));
    } catch (...) {
        write_stderr_line("axonn: error: (out of memory while formatting the error message)");
    }
}

}  // namespace

void write_stderr_line(std::string_view line) noexcept {
    std::string text;
    try {
        text.reserve(line.size() + 1);
        text.append(line).push_back('\n');
    } catch (...) {
        return;
    }
    std::size_t written = 0;
    while (written < text.size()) {
        ssize_t const n = ::write(STDERR_FILENO, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        written += static_cast<std::size_t>(n);
    }
}

JobErrors::JobErrors() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (size_ > 1) MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
}

JobErrors::~JobErrors() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

bool JobErrors::all_ranks_failed() noexcept {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm_, &request);
    auto const deadline = std::chrono::steady_clock::now() + agreement_window;
    for (;;) {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) return true;
        if (std::chrono::steady_clock::now() > deadline) return false;  // the request dies with the job
        std::this_thread::sleep_for(failure_poll_interval);
    }
}

bool JobErrors::same_failure_everywhere(std::string_view message, int status) noexcept {
    std::uint64_t const mine = fingerprint(message, status);
    std::array<std::uint64_t, 2> extremes = {mine, ~mine};  // (min, max) through two MIN reductions
    MPI_Allreduce(MPI_IN_PLACE, extremes.data(), 2, MPI_UINT64_T, MPI_MIN, comm_);
    return extremes[0] == ~extremes[1];
}

int JobErrors::end_job(std::string_view kind, std::string_view message, int status) noexcept {
    if (size_ == 1) {
        print_report(kind, message, rank_, false);
        return status;
    }
    if (all_ranks_failed()) {
        bool const same = same_failure_everywhere(message, status);
        if (!same || rank_ == 0) print_report(kind, message, rank_, !same);
        return status;
    }
    print_report(kind, message, rank_, true);
    MPI_Abort(MPI_COMM_WORLD, status);
    return status;  // MPI_Abort does not return
}

}  // namespace axonn
