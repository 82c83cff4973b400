// The one communication layer: every collective of a training step goes through a Communicator, which times
// it, records its traffic and, in debug mode, checks that all ranks of the group issued the same collective.
//
// Traffic is counted as the payload of one call as this rank sees it, in bytes, not as what the wire carries
// (a performance model applies the ring factors; it must predict exactly these numbers):
//   all_reduce, all_reduce_max: count · sizeof(element)
//   all_gather:                 count_per_rank · size() · 4   (the gathered buffer)
//   reduce_scatter:             count_per_rank · size() · 4   (the input buffer)
// A group of one rank makes no MPI call, records nothing, and acts as the identity.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace axonn {

enum class Group;  // defined in grid.h, which says which ranks each group holds

struct CommOptions {
    // Before every collective, the ranks of its group exchange what they are about to issue: a mismatch
    // throws instead of corrupting data or hanging. Costs one extra small collective per call.
    bool debug_collectives = false;
    // In debug mode, how long a rank waits for the rest of its group before it reports the hang and aborts.
    double debug_timeout_s = 120.0;
};

struct TrafficEntry {
    std::string op;
    Group group;
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    double seconds = 0;
};

// Totals per (operation, group), shared by all communicators of one grid.
class TrafficLog {
public:
    void record(std::string const& op, Group group, std::uint64_t bytes, double seconds);
    std::vector<TrafficEntry> entries() const;  // in the order each (op, group) was first recorded
    std::uint64_t bytes(Group group) const;     // all operations on that group
    void clear();

private:
    std::vector<TrafficEntry> entries_;
};

// Which collective, and what a rank is about to issue; both defined in communicator.cpp.
enum class CollectiveOp;
struct CollectiveSignature;

// One MPI communicator of the grid, owned: it is freed with this object. Buffers passed to one call must not
// overlap. Collectives are blocking and sum unless named otherwise.
class Communicator {
public:
    Communicator(MPI_Comm comm, Group group, TrafficLog& traffic, CommOptions options);
    ~Communicator();
    Communicator(Communicator const&) = delete;
    Communicator& operator=(Communicator const&) = delete;

    int size() const { return size_; }
    int rank() const { return rank_; }
    Group group() const { return group_; }

    void all_reduce(float* data, std::size_t count);
    void all_reduce(double* data, std::size_t count);  // for norms and loss sums
    void all_reduce_max(float* data, std::size_t count);
    // recv = every rank's send concatenated in this group's rank order; recv holds size() · count_per_rank.
    void all_gather(float const* send, float* recv, std::size_t count_per_rank);
    // send holds size() · count_per_rank; recv = the sum over ranks of this rank's slice.
    void reduce_scatter(float const* send, float* recv, std::size_t count_per_rank);

private:
    template <typename T>
    void all_reduce_with(T* data, std::size_t count, CollectiveOp op);
    // Runs one collective of a group larger than one: the debug check, then the timed MPI call, then its record.
    template <typename MpiCall>
    void issue(CollectiveSignature signature, std::uint64_t bytes, MpiCall&& mpi_call);
    // Debug mode: throws axonn::Error, on every rank of the group, if any rank's signature differs.
    void check_signatures(CollectiveSignature const& mine);
    void wait_or_abort(MPI_Request& request, CollectiveSignature const& mine);

    MPI_Comm comm_;
    Group group_;
    TrafficLog& traffic_;
    CommOptions options_;
    int size_ = 1;
    int rank_ = 0;
    int world_rank_ = 0;  // for the hang report, which must say which process is stuck
    std::uint64_t collectives_issued_ = 0;
};

}  // namespace axonn
