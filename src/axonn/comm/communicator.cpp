// Communicator: MPI collectives, blocking and not, with traffic accounting and the debug-mode divergence check.
#include "axonn/comm/communicator.h"

#include "axonn/comm/grid.h"
#include "axonn/comm/job_errors.h"
#include "axonn/core/error.h"
#include "axonn/core/timer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <exception>
#include <thread>

namespace axonn {

enum class CollectiveOp : std::int32_t { all_reduce, all_reduce_max, all_reduce_min, all_gather, reduce_scatter };

// Plain data, sent as bytes; every field is 8-byte aligned so that no padding goes over the wire.
struct CollectiveSignature {
    CollectiveOp op;
    std::int32_t element_bytes;
    std::uint64_t count;     // the count argument of the call (per rank for all_gather and reduce_scatter)
    std::uint64_t sequence = 0;  // 1 for this communicator's first collective; set when the call is issued
    std::int64_t world_rank = 0;
};

namespace {

char const* op_name(CollectiveOp op) {
    switch (op) {
        case CollectiveOp::all_reduce: return "all_reduce";
        case CollectiveOp::all_reduce_max: return "all_reduce_max";
        case CollectiveOp::all_reduce_min: return "all_reduce_min";
        case CollectiveOp::all_gather: return "all_gather";
        case CollectiveOp::reduce_scatter: return "reduce_scatter";
    }
    return "unknown";
}

bool same_collective(CollectiveSignature const& a, CollectiveSignature const& b) {
    return a.op == b.op && a.element_bytes == b.element_bytes && a.count == b.count && a.sequence == b.sequence;
}

// "all_gather of 64 floats per rank"
std::string describe(CollectiveSignature const& s) {
    bool const per_rank = s.op == CollectiveOp::all_gather || s.op == CollectiveOp::reduce_scatter;
    char const* element = s.element_bytes == 8 ? "double" : s.element_bytes == 2 ? "bf16 value" : "float";
    return fmt::format("{} of {} {}{}{}", op_name(s.op), s.count, element, s.count == 1 ? "" : "s",
                       per_rank ? " per rank" : "");
}

// The counts of the MPI calls that move `count` elements, none more than `max_count`: MPI counts are int.
std::vector<int> pieces(std::size_t count, std::size_t max_count) {
    std::vector<int> counts;
    for (std::size_t done = 0; done < count || counts.empty(); done += static_cast<std::size_t>(counts.back())) {
        counts.push_back(static_cast<int>(std::min(count - done, max_count)));
    }
    return counts;
}

// For the calls that are not split (the gathers of text and the all-to-all of checkpoints, bounded by their
// callers): checked before the call, so that every rank of the group fails at the same point.
int mpi_count(std::size_t count) {
    AXONN_REQUIRE(count <= static_cast<std::size_t>(INT_MAX),
                  "a collective of {} elements exceeds MPI's limit of {} per call: reduce the batch or shard further",
                  count, INT_MAX);
    return static_cast<int>(count);
}

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <>
MPI_Datatype mpi_type<bfloat16>() { return MPI_UINT16_T; }
template <>
MPI_Datatype mpi_type<std::int64_t>() { return MPI_INT64_T; }  // moved as bits; summed by bf16_sum below

// MPI has no bf16: a sum of bf16 vectors adds each pair in fp32 and rounds the result back to bf16.
void bf16_sum(void* in, void* inout, int* count, MPI_Datatype*) {
    auto const* a = static_cast<bfloat16 const*>(in);
    auto* b = static_cast<bfloat16*>(inout);
    for (int i = 0; i < *count; ++i) b[i] = to_bfloat16(to_float(a[i]) + to_float(b[i]));
}

// Created once, after MPI_Init (the first collective that needs it); freed by MPI_Finalize.
MPI_Op user_op(MPI_User_function* function) {
    MPI_Op created = MPI_OP_NULL;
    MPI_Op_create(function, 1, &created);
    return created;
}

template <typename T>
MPI_Op mpi_sum() { return MPI_SUM; }
template <>
MPI_Op mpi_sum<bfloat16>() {
    static MPI_Op const op = user_op(&bf16_sum);
    return op;
}

// A run of `count` elements of T whose extent is a whole block of `block` elements: item r of it in a buffer
// starts at r · block, so one item per rank puts each rank's piece into its block of an all-gather's result.
template <typename T>
class StridedRun {
public:
    StridedRun(int count, std::size_t block) {
        MPI_Datatype run = MPI_DATATYPE_NULL;
        MPI_Type_contiguous(count, mpi_type<T>(), &run);
        MPI_Type_create_resized(run, 0, static_cast<MPI_Aint>(block * sizeof(T)), &type_);
        MPI_Type_commit(&type_);
        MPI_Type_free(&run);
    }
    ~StridedRun() { MPI_Type_free(&type_); }  // MPI keeps it while a call that uses it is pending
    StridedRun(StridedRun const&) = delete;
    StridedRun& operator=(StridedRun const&) = delete;
    MPI_Datatype get() const { return type_; }

private:
    MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

MPI_Op mpi_reduction(Reduction reduction) {
    switch (reduction) {
        case Reduction::max: return MPI_MAX;
        case Reduction::min: return MPI_MIN;
        case Reduction::sum: break;
    }
    return MPI_SUM;
}

CollectiveOp all_reduce_op(Reduction reduction) {
    switch (reduction) {
        case Reduction::max: return CollectiveOp::all_reduce_max;
        case Reduction::min: return CollectiveOp::all_reduce_min;
        case Reduction::sum: break;
    }
    return CollectiveOp::all_reduce;
}

// Calls f.template operator()<T>() with T the element type `type` names: one implementation of each collective
// for every element type.
template <typename F>
decltype(auto) with_element(DType type, F&& f) {
    switch (type) {
        case DType::f32: return f.template operator()<float>();
        case DType::f64: return f.template operator()<double>();
        case DType::bf16: return f.template operator()<bfloat16>();
        case DType::i32:
        case DType::f16: break;
    }
    fail("collectives move f32, f64 or bf16 elements, not {}", dtype_name(type));
}

// How long a collective may take to finish while an exception unwinds past its handle: partners that issued it
// complete it at once; one whose partners never will is left behind, since the job is ending anyway.
constexpr double unwinding_grace_s = 1.0;

}  // namespace

void TrafficLog::record(CollectiveRecord const& call) {
    auto entry = std::find_if(entries_.begin(), entries_.end(),
                              [&](TrafficEntry const& e) { return e.op == call.op && e.group == call.group; });
    if (entry == entries_.end()) {
        entry = entries_.insert(entries_.end(), TrafficEntry{.op = call.op, .group = call.group});
    }
    entry->calls += 1;
    entry->bytes += call.bytes;
    entry->seconds += call.completed_s - call.issued_s;
    entry->waited_seconds += call.waited_s;
    if (calls_.size() < max_calls) calls_.push_back(call);
}

std::vector<TrafficEntry> TrafficLog::entries() const { return entries_; }

std::uint64_t TrafficLog::bytes(Group group) const {
    std::uint64_t total = 0;
    for (TrafficEntry const& entry : entries_) {
        if (entry.group == group) {
            total += entry.bytes;
        }
    }
    return total;
}

void TrafficLog::clear() {
    entries_.clear();
    calls_.clear();
}

std::vector<CollectiveRecord> TrafficLog::take_calls() { return std::exchange(calls_, {}); }

double CommunicationTime::hidden_fraction() const {
    return busy_s > 0 ? std::clamp(1.0 - waited_s / busy_s, 0.0, 1.0) : 1.0;
}

CommunicationTime communication_time(std::vector<CollectiveRecord> const& calls, std::vector<Group> const& groups) {
    std::vector<std::pair<double, double>> intervals;
    CommunicationTime time;
    for (CollectiveRecord const& call : calls) {
        if (!groups.empty() && std::find(groups.begin(), groups.end(), call.group) == groups.end()) continue;
        intervals.emplace_back(call.issued_s, call.completed_s);
        time.waited_s += call.waited_s;
    }
    std::sort(intervals.begin(), intervals.end());
    double covered_to = -1e300;
    for (auto const& [begin, end] : intervals) {
        double const from = std::max(begin, covered_to);
        if (end > from) time.busy_s += end - from;
        covered_to = std::max(covered_to, end);
    }
    return time;
}

Collective::Collective(Communicator& owner, std::shared_ptr<InFlight> in_flight, char const* op, std::uint64_t bytes,
                       std::uint64_t sequence, double issued_s)
    : owner_(&owner), in_flight_(std::move(in_flight)), op_(op), bytes_(bytes), sequence_(sequence),
      issued_s_(issued_s) {}

Collective::Collective(Communicator& owner, std::unique_ptr<DeviceCompletion> on_device, char const* op,
                       std::uint64_t bytes, std::uint64_t sequence, double issued_s)
    : owner_(&owner), on_device_(std::move(on_device)), op_(op), bytes_(bytes), sequence_(sequence),
      issued_s_(issued_s) {}

Collective::Collective(Collective&& other) noexcept
    : owner_(other.owner_), in_flight_(std::move(other.in_flight_)), on_device_(std::move(other.on_device_)),
      op_(other.op_), bytes_(other.bytes_), sequence_(other.sequence_), issued_s_(other.issued_s_) {}

Collective& Collective::operator=(Collective&& other) noexcept {
    if (this != &other) {
        if (active()) abandon_or_report();
        owner_ = other.owner_;
        in_flight_ = std::move(other.in_flight_);
        on_device_ = std::move(other.on_device_);
        op_ = other.op_;
        bytes_ = other.bytes_;
        sequence_ = other.sequence_;
        issued_s_ = other.issued_s_;
    }
    return *this;
}

Collective::~Collective() {
    if (active()) abandon_or_report();
}

void Collective::wait() {
    if (!active()) return;
    double const wait_begin = trace_seconds();
    if (on_device_) {
        on_device_->wait();
    } else {
        owner_->progress_.wait(*in_flight_);
    }
    double const wait_end = trace_seconds();
    // A device collective's wait only orders the device's later work after it: its record ends at the wait, the
    // host's view (the device's own timeline is a profiler's: docs/GPU.md).
    double const completed = on_device_ ? wait_end : std::max(in_flight_->completed_s, issued_s_);
    owner_->traffic_.record({op_, owner_->group_, bytes_, issued_s_, completed, wait_begin, wait_end - wait_begin});
    in_flight_.reset();
    on_device_.reset();
}

void Collective::abandon_or_report() noexcept {
    if (std::uncaught_exceptions() > 0) {
        if (in_flight_) owner_->progress_.wait_for(in_flight_, unwinding_grace_s);
        if (on_device_) on_device_->abandon();
        in_flight_.reset();
        on_device_.reset();
        return;
    }
    if (owner_->options_.debug_collectives) {
        write_stderr_line(fmt::format("axonn: internal error: world rank {} issued collective #{} on group {} ({}) "
                                      "and never waited on it; aborting", owner_->world_rank_, sequence_,
                                      group_name(owner_->group_), op_));
        MPI_Abort(MPI_COMM_WORLD, 70);
    }
    try {
        wait();
    } catch (...) {
        in_flight_.reset();  // recording failed (out of memory): the collective itself has completed
        on_device_.reset();
    }
}

Communicator::Communicator(MPI_Comm comm, Group group, TrafficLog& traffic, ProgressEngine& progress,
                           CommOptions options)
    : comm_(comm), group_(group), traffic_(traffic), progress_(progress), options_(options) {
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
}

Communicator::~Communicator() {
    // A grid that outlives MPI_Finalize (a static, an exception unwinding past main's session) must not call MPI.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Comm_free(&comm_);
    }
}

void Communicator::all_reduce(void* data, DType type, std::size_t count, Reduction reduction) {
    with_element(type, [&]<typename T>() { all_reduce_with(static_cast<T*>(data), count, reduction); });
}

void Communicator::all_gather(void const* send, void* recv, DType type, std::size_t count_per_rank) {
    start_all_gather(send, recv, type, count_per_rank).wait();
}

void Communicator::reduce_scatter(void const* send, void* recv, DType type, std::size_t count_per_rank) {
    start_reduce_scatter(send, recv, type, count_per_rank).wait();
}

Collective Communicator::start_all_reduce(void* data, DType type, std::size_t count) {
    return with_element(type, [&]<typename T>() { return start_all_reduce_with(static_cast<T*>(data), count); });
}

Collective Communicator::start_all_gather(void const* send, void* recv, DType type, std::size_t count_per_rank) {
    return with_element(type, [&]<typename T>() {
        return start_all_gather_with(static_cast<T const*>(send), static_cast<T*>(recv), count_per_rank);
    });
}

Collective Communicator::start_reduce_scatter(void const* send, void* recv, DType type, std::size_t count_per_rank) {
    return with_element(type, [&]<typename T>() {
        return start_reduce_scatter_with(static_cast<T const*>(send), static_cast<T*>(recv), count_per_rank);
    });
}

template <typename T>
Collective Communicator::start_all_gather_with(T const* send, T* recv, std::size_t count_per_rank) {
    bool const device = on_device(send, recv);
    if (size_ == 1) {
        copy_alone(send, recv, count_per_rank, device);
        return {};
    }
    CollectiveSignature const signature{
        .op = CollectiveOp::all_gather, .element_bytes = sizeof(T), .count = count_per_rank};
    if (device) {
        return start_on_device(signature, count_per_rank * size_ * sizeof(T),
                               [&] { return device_group().all_gather(send, recv, count_per_rank, dtype_of<T>()); });
    }
    return start(signature, count_per_rank * size_ * sizeof(T), [&](std::vector<MPI_Request>& requests) {
        std::vector<int> const counts = pieces(count_per_rank, options_.max_count);
        if (counts.size() == 1) {
            MPI_Iallgather(send, counts[0], mpi_type<T>(), recv, counts[0], mpi_type<T>(), comm_, &requests.emplace_back());
            return;
        }
        for (std::size_t offset = 0; int const count : counts) {
            StridedRun<T> const piece(count, count_per_rank);
            MPI_Iallgather(send + offset, count, mpi_type<T>(), recv + offset, 1, piece.get(), comm_,
                           &requests.emplace_back());
            offset += static_cast<std::size_t>(count);
        }
    });
}

template <typename T>
Collective Communicator::start_reduce_scatter_with(T const* send, T* recv, std::size_t count_per_rank) {
    bool const device = on_device(send, recv);
    if (size_ == 1) {
        copy_alone(send, recv, count_per_rank, device);
        return {};
    }
    CollectiveSignature const signature{
        .op = CollectiveOp::reduce_scatter, .element_bytes = sizeof(T), .count = count_per_rank};
    if (device) {
        return start_on_device(signature, count_per_rank * size_ * sizeof(T), [&] {
            return device_group().reduce_scatter(send, recv, count_per_rank, dtype_of<T>());
        });
    }
    return start(signature, count_per_rank * size_ * sizeof(T), [&](std::vector<MPI_Request>& requests) {
        std::vector<int> const counts = pieces(count_per_rank, options_.max_count);
        if (counts.size() == 1) {
            MPI_Ireduce_scatter_block(send, recv, counts[0], mpi_type<T>(), mpi_sum<T>(), comm_,
                                      &requests.emplace_back());
            return;
        }
        // OpenMPI 4.1 misplaces a reduce-scatter's pieces described by a resized datatype: each piece of each
        // rank's block is reduced to that rank instead, contiguous and of MPI's own type.
        for (std::size_t offset = 0; int const count : counts) {
            for (int root = 0; root < size_; ++root) {
                T const* block = send + static_cast<std::size_t>(root) * count_per_rank + offset;
                MPI_Ireduce(block, root == rank_ ? recv + offset : nullptr, count, mpi_type<T>(), mpi_sum<T>(), root,
                            comm_, &requests.emplace_back());
            }
            offset += static_cast<std::size_t>(count);
        }
    });
}

std::vector<std::string> Communicator::gather_text(std::string const& text) {
    if (size_ == 1) return {text};
    int const length = mpi_count(text.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0), offsets(lengths.size());
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_);
    std::string all;
    if (rank_ == 0) {
        std::int64_t total = 0;
        for (int r = 0; r < size_; ++r) {
            offsets[r] = mpi_count(static_cast<std::size_t>(total));
            total += lengths[r];
        }
        all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm_);
    std::vector<std::string> texts;
    for (std::size_t r = 0; r < lengths.size(); ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
    return texts;
}

template <typename T>
std::vector<T> Communicator::all_to_all_with(std::vector<std::vector<T>> const& send) {
    AXONN_INVARIANT(send.size() == static_cast<std::size_t>(size_),
                    "all_to_all needs one vector per rank, got {} for {}", send.size(), size_);
    if (size_ == 1) return send.front();
    std::vector<int> send_counts(size_), send_offsets(size_), recv_counts(size_), recv_offsets(size_);
    std::vector<T> packed;
    for (int r = 0; r < size_; ++r) {
        send_counts[r] = mpi_count(send[r].size());
        send_offsets[r] = mpi_count(packed.size());
        packed.insert(packed.end(), send[r].begin(), send[r].end());
    }
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm_);
    std::size_t total = 0;
    for (int r = 0; r < size_; ++r) {
        recv_offsets[r] = mpi_count(total);
        total += static_cast<std::size_t>(recv_counts[r]);
    }
    std::vector<T> received(total);
    MPI_Alltoallv(packed.data(), send_counts.data(), send_offsets.data(), mpi_type<T>(), received.data(),
                  recv_counts.data(), recv_offsets.data(), mpi_type<T>(), comm_);
    return received;
}

std::vector<std::int64_t> Communicator::all_to_all(std::vector<std::vector<std::int64_t>> const& send) {
    return all_to_all_with(send);
}
std::vector<float> Communicator::all_to_all(std::vector<std::vector<float>> const& send) {
    return all_to_all_with(send);
}

void Communicator::barrier_quietly() {
    if (size_ == 1) return;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm_, &request);
    for (int done = 0; !done; std::this_thread::sleep_for(std::chrono::milliseconds(1))) {
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
}

std::unique_ptr<Communicator> Communicator::split(int colour, int key, Group group, TrafficLog& traffic) {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_split(comm_, colour < 0 ? MPI_UNDEFINED : colour, key, &comm);
    if (comm == MPI_COMM_NULL) return nullptr;
    return std::make_unique<Communicator>(comm, group, traffic, progress_, options_);
}

template <typename T>
void Communicator::all_reduce_with(T* data, std::size_t count, Reduction reduction) {
    if (size_ == 1) {
        return;
    }
    CollectiveSignature const signature{.op = all_reduce_op(reduction), .element_bytes = sizeof(T), .count = count};
    if (on_device(data)) {
        start_on_device(signature, count * sizeof(T), [&] {
            return device_group().all_reduce(data, count, dtype_of<T>(), reduction);
        }).wait();
        return;
    }
    issue(signature, count * sizeof(T), [&] {
        for (std::size_t offset = 0; int const piece : pieces(count, options_.max_count)) {
            MPI_Allreduce(MPI_IN_PLACE, data + offset, piece, mpi_type<T>(), mpi_reduction(reduction), comm_);
            offset += static_cast<std::size_t>(piece);
        }
    });
}

template <typename T>
Collective Communicator::start_all_reduce_with(T* data, std::size_t count) {
    if (size_ == 1) {
        return {};
    }
    CollectiveSignature const signature{.op = CollectiveOp::all_reduce, .element_bytes = sizeof(T), .count = count};
    if (on_device(data)) {
        return start_on_device(signature, count * sizeof(T),
                               [&] { return device_group().all_reduce(data, count, dtype_of<T>(), Reduction::sum); });
    }
    return start(signature, count * sizeof(T), [&](std::vector<MPI_Request>& requests) {
        for (std::size_t offset = 0; int const piece : pieces(count, options_.max_count)) {
            MPI_Iallreduce(MPI_IN_PLACE, data + offset, piece, mpi_type<T>(), mpi_sum<T>(), comm_,
                           &requests.emplace_back());
            offset += static_cast<std::size_t>(piece);
        }
    });
}

CollectiveSignature Communicator::stamp(CollectiveSignature signature) {
    signature.sequence = ++collectives_issued_;
    signature.world_rank = world_rank_;
    if (options_.debug_collectives) {
        check_signatures(signature);
    }
    return signature;
}

template <typename MpiCall>
void Communicator::issue(CollectiveSignature signature, std::uint64_t bytes, MpiCall&& mpi_call) {
    signature = stamp(signature);
    double const issued = trace_seconds();
    mpi_call();
    double const completed = trace_seconds();
    traffic_.record({op_name(signature.op), group_, bytes, issued, completed, issued, completed - issued});
}

template <typename MpiStart>
Collective Communicator::start(CollectiveSignature signature, std::uint64_t bytes, MpiStart&& mpi_start) {
    signature = stamp(signature);
    double const issued = trace_seconds();
    std::vector<MPI_Request> requests;
    mpi_start(requests);
    return Collective(*this, progress_.track(std::move(requests)), op_name(signature.op), bytes, signature.sequence,
                      issued);
}

template <typename DeviceStart>
Collective Communicator::start_on_device(CollectiveSignature signature, std::uint64_t bytes,
                                         DeviceStart&& device_start) {
    signature = stamp(signature);
    double const issued = trace_seconds();
    return Collective(*this, device_start(), op_name(signature.op), bytes, signature.sequence, issued);
}

DeviceGroup& Communicator::device_group() {
    // Made at the group's first device collective, which every member reaches in the same program order: groups
    // that never move a device buffer hold no device communicator.
    if (!device_group_) device_group_ = options_.device->connect(comm_);
    return *device_group_;
}

bool Communicator::on_device(void const* pointer) const { return options_.device && options_.device->holds(pointer); }

bool Communicator::on_device(void const* send, void const* recv) const {
    bool const device = on_device(send);
    AXONN_INVARIANT(device == on_device(recv),
                    "a collective on group {} got one buffer in device memory and one on the "
                    "host: both must be in the same memory",
                    group_name(group_));
    return device;
}

template <typename T>
void Communicator::copy_alone(T const* send, T* recv, std::size_t count, bool device) {
    if (device) {
        options_.device->copy(recv, send, count * sizeof(T));
    } else {
        std::copy_n(send, count, recv);
    }
}

void Communicator::check_signatures(CollectiveSignature const& mine) {
    std::vector<CollectiveSignature> all(size_);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_, &request);
    wait_or_abort(request, mine);
    // Every rank sees the same table, so every rank throws the same error and none is left waiting.
    CollectiveSignature const& expected = all.front();
    auto const diverging = std::find_if(all.begin(), all.end(), [&](CollectiveSignature const& s) {
        return !same_collective(s, expected);
    });
    if (diverging == all.end()) {
        return;
    }
    std::string const own_number =
        diverging->sequence == expected.sequence ? "" : fmt::format(" as its collective #{}", diverging->sequence);
    fail("collective #{} on group {} diverged: rank {} (world rank {}) issued {}{}, rank 0 (world rank {}) issued {}: "
         "every rank of a group must issue the same collectives in the same order",
         expected.sequence, group_name(group_), diverging - all.begin(), diverging->world_rank, describe(*diverging),
         own_number, expected.world_rank, describe(expected));
}

// Polls rather than waits so that a rank whose partners never arrive reports it instead of hanging forever.
void Communicator::wait_or_abort(MPI_Request& request, CollectiveSignature const& mine) {
    Stopwatch waited;
    for (;;) {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) {
            return;
        }
        if (waited.seconds() > options_.debug_timeout_s) {
            write_stderr_line(fmt::format("axonn: error: world rank {} waited {:.0f} s in collective #{} on group {} "
                                          "({}): another rank of this group issued fewer collectives; aborting",
                                          world_rank_, waited.seconds(), mine.sequence, group_name(group_),
                                          describe(mine)));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        // Debug mode trades latency for leaving the cores to the other ranks (often oversubscribed in tests).
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

}  // namespace axonn
