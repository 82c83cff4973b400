// NCCL collectives for one process's GPU (built with -DAXONN_CUDA=ON): the device side of every Communicator of
// a grid whose model lives in GPU memory (comm/device_collectives.h).
//
// Each group gets its own NCCL communicator, bootstrapped over the group's MPI communicator (rank 0 makes the
// unique id and broadcasts it). Every group's collectives go onto one communication stream per process, in the
// order the host issues them: every rank issues its groups' collectives in the same program order, so one stream
// cannot deadlock. A collective first waits (an event) for the work already queued on the backend's compute
// stream, which produced its inputs; the compute stream goes on meanwhile, so the kernels queued before the
// collective's wait overlap with it. wait() makes the compute stream wait on the collective's closing event, so
// that the kernels queued after it read its result; the host does not wait (what it reads from the device comes
// through the compute stream, after that event). A collective abandoned while the job fails aborts its group's
// communicator, so that no kernel is left waiting for partners.
#pragma once

#include "axonn/comm/device_collectives.h"

#include <cuda_runtime.h>

namespace axonn {

class NcclCommunication final : public DeviceCommunication {
public:
    // compute: the stream the backend queues its kernels on; device: the GPU both use.
    NcclCommunication(cudaStream_t compute, int device);
    ~NcclCommunication() override;
    NcclCommunication(NcclCommunication const&) = delete;
    NcclCommunication& operator=(NcclCommunication const&) = delete;

    // Whether this build has NCCL (CMake found it): without it, groups of several ranks are refused.
    static bool built_with_nccl();

    bool holds(void const* pointer) const override;
    std::unique_ptr<DeviceGroup> connect(MPI_Comm group) override;
    void copy(void* to, void const* from, std::size_t bytes) override;

private:
    cudaStream_t compute_;
    cudaStream_t communication_ = nullptr;
    int device_;
};

}  // namespace axonn
