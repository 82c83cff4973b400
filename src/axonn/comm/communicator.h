// The one communication layer: every collective goes through a Communicator, which times it, records its
// traffic and, in debug mode, checks that all ranks of the group issued the same collective.
//
// Collectives are blocking (all_reduce, ...) or non-blocking (start_all_reduce, ...): a start call issues the
// collective and returns a Collective handle whose wait() completes it; the buffers must stay untouched until
// then. A progress thread (comm/progress.h) advances it meanwhile. Waiting at once is the blocking behaviour on
// the same MPI call, so a program that overlaps and one that does not compute bitwise the same.
//
// Traffic is counted as the payload of one call as this rank sees it, in bytes, not as what the wire carries
// (a performance model applies the ring factors; it must predict exactly these numbers):
//   all_reduce, all_reduce_max: count · sizeof(element)
//   all_gather:                 count_per_rank · size() · sizeof(element)   (the gathered buffer)
//   reduce_scatter:             count_per_rank · size() · sizeof(element)   (the input buffer)
// Elements are fp32, fp64 (norms and loss sums) or bf16 (mixed precision: half the bytes; a bf16 sum adds in
// fp32 and rounds each partial result to bf16).
// A group of one rank makes no MPI call, records nothing, and acts as the identity.
// Buffers in a device's memory (CommOptions::device says which) go through that device's collectives (NCCL)
// instead of MPI, with the same accounting, the same debug check and the same Collective handles
// (comm/device_collectives.h); host buffers always go through MPI.
// MPI counts are int: a collective of more elements than that (per rank, for the gathers and scatters) is issued
// as several MPI calls of at most CommOptions::max_count elements each, all completed by one wait, and recorded as
// one call. An all-reduce is cut into consecutive ranges; an all-gather into the same range of every rank's block,
// received through a datatype whose extent is the block; a reduce-scatter into one reduction per range and rank
// (OpenMPI 4.1 misplaces a reduce-scatter of such a datatype). No data is copied.
#pragma once

#include "axonn/comm/device_collectives.h"
#include "axonn/comm/progress.h"
#include "axonn/core/bfloat16.h"
#include "axonn/core/tensor.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace axonn {

enum class Group;  // defined in grid.h, which says which ranks each group holds

struct CommOptions {
    // Before every collective, the ranks of its group exchange what they are about to issue: a mismatch
    // throws instead of corrupting data or hanging, and a non-blocking collective never waited on is reported.
    // Costs one extra small collective per call.
    bool debug_collectives = false;
    // In debug mode, how long a rank waits for the rest of its group before it reports the hang and aborts.
    double debug_timeout_s = 120.0;
    // The most elements one MPI call moves (per rank for the gathers and scatters): MPI's int limit. Tests lower
    // it to check the split collectives on small buffers.
    std::size_t max_count = 2147483647;
    // The device whose memory the model's buffers live in (a GPU with NCCL), or null where they are the host's.
    std::shared_ptr<DeviceCommunication> device = nullptr;
};

// Totals per (operation, group).
struct TrafficEntry {
    std::string op;
    Group group;
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    double seconds = 0;         // from issue to completion, summed
    double waited_seconds = 0;  // the part this rank spent waiting for it: the exposed communication
};

// One call, on the trace clock (core/timer.h).
struct CollectiveRecord {
    char const* op;
    Group group;
    std::uint64_t bytes;
    double issued_s;
    double completed_s;
    double wait_begin_s;  // when the rank started to wait (= issued_s for a blocking call)
    double waited_s;      // how long it waited
};

// How long collectives were in flight (the union of their issue-to-completion intervals: collectives in flight
// together count once) and how long this rank waited for them: the time communication took, and the part of it
// that computation did not hide.
struct CommunicationTime {
    double busy_s = 0;
    double waited_s = 0;
    double hidden_fraction() const;  // 1 − waited / busy, within [0, 1]; 1 without communication
};
// Of `calls`, or of those on `groups` only (empty: all).
CommunicationTime communication_time(std::vector<CollectiveRecord> const& calls, std::vector<Group> const& groups = {});

// Shared by all communicators of one grid: totals since clear(), and the calls since take_calls().
class TrafficLog {
public:
    void record(CollectiveRecord const& call);
    std::vector<TrafficEntry> entries() const;  // in the order each (op, group) was first recorded
    std::uint64_t bytes(Group group) const;     // all operations on that group
    void clear();
    // The calls recorded since the last take (at most max_calls of them are kept in between).
    std::vector<CollectiveRecord> take_calls();

    static constexpr std::size_t max_calls = std::size_t{1} << 20;

private:
    std::vector<TrafficEntry> entries_;
    std::vector<CollectiveRecord> calls_;
};

// Which collective, and what a rank is about to issue; both defined in communicator.cpp.
enum class CollectiveOp;
struct CollectiveSignature;
class Communicator;

// A non-blocking collective in flight. wait() completes it and records it. A handle destroyed without a wait is
// waited on then (in debug mode it is reported as a bug and the job aborted); while an exception unwinds, the
// collective is given a second to finish and is otherwise left behind.
class Collective {
public:
    Collective() = default;  // nothing in flight: a group of one
    Collective(Collective&& other) noexcept;
    Collective& operator=(Collective&& other) noexcept;
    Collective(Collective const&) = delete;
    Collective& operator=(Collective const&) = delete;
    ~Collective();

    void wait();
    bool active() const { return in_flight_ != nullptr || on_device_ != nullptr; }

private:
    friend class Communicator;
    Collective(Communicator& owner, std::shared_ptr<InFlight> in_flight, char const* op, std::uint64_t bytes,
               std::uint64_t sequence, double issued_s);
    Collective(Communicator& owner, std::unique_ptr<DeviceCompletion> on_device, char const* op, std::uint64_t bytes,
               std::uint64_t sequence, double issued_s);
    void abandon_or_report() noexcept;

    Communicator* owner_ = nullptr;
    std::shared_ptr<InFlight> in_flight_;       // an MPI collective, or
    std::unique_ptr<DeviceCompletion> on_device_;  // a device collective
    char const* op_ = nullptr;
    std::uint64_t bytes_ = 0;
    std::uint64_t sequence_ = 0;
    double issued_s_ = 0;
};

// One MPI communicator of the grid, owned: it is freed with this object. Buffers passed to one call must not
// overlap. Collectives sum unless named otherwise.
class Communicator {
public:
    Communicator(MPI_Comm comm, Group group, TrafficLog& traffic, ProgressEngine& progress, CommOptions options);
    ~Communicator();
    Communicator(Communicator const&) = delete;
    Communicator& operator=(Communicator const&) = delete;

    int size() const { return size_; }
    int rank() const { return rank_; }
    Group group() const { return group_; }

    // Every collective names the element type it moves (f32, f64 or bf16), on the host and on a device alike.
    // `reduction` combines the ranks' elements: a sum, or the maximum or minimum (blocking all-reduces only).
    void all_reduce(void* data, DType type, std::size_t count, Reduction reduction = Reduction::sum);
    // recv = every rank's send concatenated in this group's rank order; recv holds size() · count_per_rank.
    void all_gather(void const* send, void* recv, DType type, std::size_t count_per_rank);
    // send holds size() · count_per_rank; recv = the sum over ranks of this rank's slice.
    void reduce_scatter(void const* send, void* recv, DType type, std::size_t count_per_rank);
    [[nodiscard]] Collective start_all_reduce(void* data, DType type, std::size_t count);
    [[nodiscard]] Collective start_all_gather(void const* send, void* recv, DType type, std::size_t count_per_rank);
    [[nodiscard]] Collective start_reduce_scatter(void const* send, void* recv, DType type, std::size_t count_per_rank);

    // The same with the element type taken from the pointers' (float, double or bfloat16).
    template <typename T>
    void all_reduce(T* data, std::size_t count) {
        all_reduce(data, dtype_of<T>(), count);
    }
    template <typename T>
    void all_reduce_max(T* data, std::size_t count) {
        all_reduce(data, dtype_of<T>(), count, Reduction::max);
    }
    template <typename T>
    void all_reduce_min(T* data, std::size_t count) {
        all_reduce(data, dtype_of<T>(), count, Reduction::min);
    }
    template <typename T>
    void all_gather(T const* send, T* recv, std::size_t count_per_rank) {
        all_gather(send, recv, dtype_of<T>(), count_per_rank);
    }
    template <typename T>
    void reduce_scatter(T const* send, T* recv, std::size_t count_per_rank) {
        reduce_scatter(send, recv, dtype_of<T>(), count_per_rank);
    }
    template <typename T>
    [[nodiscard]] Collective start_all_reduce(T* data, std::size_t count) {
        return start_all_reduce(data, dtype_of<T>(), count);
    }
    template <typename T>
    [[nodiscard]] Collective start_all_gather(T const* send, T* recv, std::size_t count_per_rank) {
        return start_all_gather(send, recv, dtype_of<T>(), count_per_rank);
    }
    template <typename T>
    [[nodiscard]] Collective start_reduce_scatter(T const* send, T* recv, std::size_t count_per_rank) {
        return start_reduce_scatter(send, recv, dtype_of<T>(), count_per_rank);
    }

    // Rank 0 receives every member's text, in rank order (the others get nothing). Not part of a step: used to
    // collect traces at the end of a run.
    std::vector<std::string> gather_text(std::string const& text);
    // Rank r sends send[r] to every rank r of the group (send holds size() vectors) and receives what each rank
    // sent it, concatenated in rank order. Not part of a step: checkpoints redistribute shards with it.
    std::vector<std::int64_t> all_to_all(std::vector<std::vector<std::int64_t>> const& send);
    std::vector<float> all_to_all(std::vector<std::vector<float>> const& send);

    // Waits until every rank of the group arrives, sleeping rather than spinning, so that ranks which share
    // cores leave them to the ones still working.
    void barrier_quietly();
    // A communicator of the members that pass the same `colour` (ordered by `key`); a negative colour is in
    // none and gets null. Collective over this group. Its traffic goes to `traffic`.
    std::unique_ptr<Communicator> split(int colour, int key, Group group, TrafficLog& traffic);

private:
    friend class Collective;
    template <typename T>
    std::vector<T> all_to_all_with(std::vector<std::vector<T>> const& send);
    template <typename T>
    void all_reduce_with(T* data, std::size_t count, Reduction reduction);
    template <typename T>
    Collective start_all_reduce_with(T* data, std::size_t count);
    template <typename T>
    Collective start_all_gather_with(T const* send, T* recv, std::size_t count_per_rank);
    template <typename T>
    Collective start_reduce_scatter_with(T const* send, T* recv, std::size_t count_per_rank);
    // Runs one blocking collective of a group larger than one: the debug check, then the timed MPI call, then
    // its record.
    template <typename MpiCall>
    void issue(CollectiveSignature signature, std::uint64_t bytes, MpiCall&& mpi_call);
    // The same for a non-blocking one: the MPI calls return requests (one per piece), which the progress engine
    // takes.
    template <typename MpiStart>
    Collective start(CollectiveSignature signature, std::uint64_t bytes, MpiStart&& mpi_start);
    // The same on the device: `device_start` queues the collective and returns its completion.
    template <typename DeviceStart>
    Collective start_on_device(CollectiveSignature signature, std::uint64_t bytes, DeviceStart&& device_start);
    // The device's collectives over this group, connected at the first call (collective over the group).
    DeviceGroup& device_group();
    // Whether `pointer` is the device's memory; the two buffers of a gather or scatter must agree.
    bool on_device(void const* pointer) const;
    bool on_device(void const* send, void const* recv) const;
    // A group of one's gather or scatter: its input is its output.
    template <typename T>
    void copy_alone(T const* send, T* recv, std::size_t count, bool device);
    // Debug mode: throws axonn::Error, on every rank of the group, if any rank's signature differs.
    void check_signatures(CollectiveSignature const& mine);
    void wait_or_abort(MPI_Request& request, CollectiveSignature const& mine);
    CollectiveSignature stamp(CollectiveSignature signature);

    MPI_Comm comm_;
    Group group_;
    TrafficLog& traffic_;
    ProgressEngine& progress_;
    CommOptions options_;
    std::unique_ptr<DeviceGroup> device_group_;  // with a device, for a group of two ranks or more, once used
    int size_ = 1;
    int rank_ = 0;
    int world_rank_ = 0;  // for the hang report, which must say which process is stuck
    std::uint64_t collectives_issued_ = 0;
};

}  // namespace axonn
