// NcclCommunication: NCCL communicators per group, bootstrapped over MPI, on one communication stream. Built
// without NCCL (AXONN_HAVE_NCCL undefined: CMake did not find it), it knows device memory and copies for groups of
// one, and refuses groups of several ranks.
#include "axonn/comm/nccl/nccl_communication.h"

#include "axonn/core/error.h"
#include "axonn/core/cuda/cuda_check.h"
#include "axonn/core/cuda/event.h"

#ifdef AXONN_HAVE_NCCL
#include <nccl.h>
#endif

#include <exception>

namespace axonn {
#ifdef AXONN_HAVE_NCCL
namespace {

void check(ncclResult_t status, char const* what) {
    AXONN_REQUIRE(status == ncclSuccess, "NCCL failed to {}: {} ({}); NCCL_DEBUG=WARN says more", what,
                  ncclGetErrorString(status), ncclGetLastError(nullptr));
}

ncclDataType_t nccl_type(DType element) {
    switch (element) {
        case DType::f32: return ncclFloat32;
        case DType::f64: return ncclFloat64;
        case DType::bf16: return ncclBfloat16;
        case DType::i32:
        case DType::f16: break;
    }
    fail("NCCL collectives here move f32, f64 or bf16, not {}", dtype_name(element));
}

ncclRedOp_t nccl_op(Reduction reduction) {
    switch (reduction) {
        case Reduction::sum: return ncclSum;
        case Reduction::max: return ncclMax;
        case Reduction::min: return ncclMin;
    }
    fail("unknown device reduction {}", static_cast<int>(reduction));
}

class NcclGroup;

// A collective's closing event; waiting makes the compute stream wait on it.
class NcclCompletion final : public DeviceCompletion {
public:
    explicit NcclCompletion(NcclGroup& group) : group_(group) {}
    cuda::Event const& done() const { return done_; }
    void wait() override;
    void abandon() noexcept override;

private:
    NcclGroup& group_;
    cuda::Event done_;
};

class NcclGroup final : public DeviceGroup {
public:
    NcclGroup(ncclComm_t comm, cudaStream_t compute, cudaStream_t communication)
        : comm_(comm), compute_(compute), communication_(communication) {}
    ~NcclGroup() override {
        // While an exception unwinds, partners may never issue what is pending: abort rather than wait for it.
        if (std::uncaught_exceptions() > 0) {
            abort();
        } else if (!aborted_) {
            ncclCommDestroy(comm_);
        }
    }
    NcclGroup(NcclGroup const&) = delete;
    NcclGroup& operator=(NcclGroup const&) = delete;

    cudaStream_t compute() const { return compute_; }
    // Stops this group's collectives, queued or running; the communicator cannot be used again.
    void abort() noexcept {
        if (aborted_) return;
        ncclCommAbort(comm_);
        aborted_ = true;
    }

    std::unique_ptr<DeviceCompletion> all_reduce(void* data, std::size_t count, DType element,
                                                 Reduction reduction) override {
        return queue("queue an all-reduce", [&] {
            return ncclAllReduce(data, data, count, nccl_type(element), nccl_op(reduction), comm_, communication_);
        });
    }
    std::unique_ptr<DeviceCompletion> all_gather(void const* send, void* recv, std::size_t count_per_rank,
                                                 DType element) override {
        return queue("queue an all-gather", [&] {
            return ncclAllGather(send, recv, count_per_rank, nccl_type(element), comm_, communication_);
        });
    }
    std::unique_ptr<DeviceCompletion> reduce_scatter(void const* send, void* recv, std::size_t count_per_rank,
                                                     DType element) override {
        return queue("queue a reduce-scatter", [&] {
            return ncclReduceScatter(send, recv, count_per_rank, nccl_type(element), ncclSum, comm_, communication_);
        });
    }

private:
    // The collective runs after the compute stream's queued work (its inputs) and records its end. One event marks
    // the inputs for every call: a stream waits on an event as last recorded when the wait is queued.
    template <typename NcclCall>
    std::unique_ptr<DeviceCompletion> queue(char const* what, NcclCall&& nccl_call) {
        inputs_ready_.record(compute_);
        cuda::check(cudaStreamWaitEvent(communication_, inputs_ready_.get(), 0), "order communication after compute");
        check(nccl_call(), what);
        auto completion = std::make_unique<NcclCompletion>(*this);
        completion->done().record(communication_);
        return completion;
    }

    ncclComm_t comm_;
    cudaStream_t compute_;
    cudaStream_t communication_;
    cuda::Event const inputs_ready_;
    bool aborted_ = false;
};

void NcclCompletion::wait() {
    cuda::check(cudaStreamWaitEvent(group_.compute(), done_.get(), 0), "order computation after a collective");
}

void NcclCompletion::abandon() noexcept { group_.abort(); }

// What rank 0 of a group broadcasts: whether it made an id, and the id.
struct Bootstrap {
    int made = 0;
    ncclUniqueId id{};
};

}  // namespace
#endif

NcclCommunication::NcclCommunication(cudaStream_t compute, int device) : compute_(compute), device_(device) {
    cuda::check(cudaSetDevice(device_), "select the GPU");
    cuda::check(cudaStreamCreateWithFlags(&communication_, cudaStreamNonBlocking), "create the communication stream");
}

NcclCommunication::~NcclCommunication() { cudaStreamDestroy(communication_); }

bool NcclCommunication::built_with_nccl() {
#ifdef AXONN_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

bool NcclCommunication::holds(void const* pointer) const {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
        cudaGetLastError();  // a pointer CUDA does not know is host memory; clear the error it leaves
        return false;
    }
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

std::unique_ptr<DeviceGroup> NcclCommunication::connect(MPI_Comm group) {
#ifndef AXONN_HAVE_NCCL
    (void)group;
    throw UsageError("--backend cuda on several ranks needs NCCL, and this build has none: rebuild with NCCL found "
                     "(set NCCL_ROOT to its folder), or run on one rank");
#else
    int size = 1, rank = 0;
    MPI_Comm_size(group, &size);
    MPI_Comm_rank(group, &rank);
    Bootstrap bootstrap;
    if (rank == 0) bootstrap.made = ncclGetUniqueId(&bootstrap.id) == ncclSuccess ? 1 : 0;
    MPI_Bcast(&bootstrap, sizeof bootstrap, MPI_BYTE, 0, group);
    // Every rank of the group fails here alike, rather than waiting in ncclCommInitRank for rank 0.
    AXONN_REQUIRE(bootstrap.made == 1,
                  "NCCL could not make a communicator id on the group's first rank: check that "
                  "NCCL finds a network interface (NCCL_DEBUG=WARN, NCCL_SOCKET_IFNAME)");
    cuda::check(cudaSetDevice(device_), "select the GPU");
    ncclComm_t comm = nullptr;
    check(ncclCommInitRank(&comm, size, bootstrap.id, rank), "create a communicator (each rank needs a GPU "
                "of its own: no more ranks per node than GPUs)");
    return std::make_unique<NcclGroup>(comm, compute_, communication_);
#endif
}

void NcclCommunication::copy(void* to, void const* from, std::size_t bytes) {
    if (to == from || bytes == 0) return;
    cuda::check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, compute_), "copy on the GPU");
}

}  // namespace axonn
