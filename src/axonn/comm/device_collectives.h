// Collectives over a device's memory (a GPU's): the seam through which a Communicator hands the buffers that live
// on the device to a device library (NCCL: comm/nccl/), while host buffers (loss sums, norms, flags) keep going
// through MPI. The Communicator keeps everything else: the group, the debug-mode signature check (over MPI, on the
// host), the traffic log.
//
// A device collective is queued behind the work the backend has already queued (its results are the collective's
// inputs) and runs beside the backend's later work; its wait() orders the work the host queues afterwards after
// it, so that this work sees its result and may overwrite its buffers. A Collective that is started and waited
// later therefore overlaps with the kernels queued in between, as the MPI collectives overlap with the CPU's.
#pragma once

#include "axonn/core/tensor.h"

#include <mpi.h>

#include <cstddef>
#include <memory>

namespace axonn {

// How an all-reduce combines the ranks' elements.
enum class Reduction { sum, max, min };

// One collective queued on the device.
class DeviceCompletion {
public:
    virtual ~DeviceCompletion() = default;
    // Work queued on the device from now on runs after the collective (the host need not wait).
    virtual void wait() = 0;
    // The job is failing and this collective will not be waited on: stop its group's collectives, so that nothing
    // on the device waits for partners that will not come (freeing device memory would wait for them).
    virtual void abandon() noexcept = 0;
};

// One group's collectives; buffers are device memory; the counts are as Communicator's.
class DeviceGroup {
public:
    virtual ~DeviceGroup() = default;
    virtual std::unique_ptr<DeviceCompletion> all_reduce(void* data, std::size_t count, DType element,
                                                         Reduction reduction) = 0;
    virtual std::unique_ptr<DeviceCompletion> all_gather(void const* send, void* recv, std::size_t count_per_rank,
                                                         DType element) = 0;
    virtual std::unique_ptr<DeviceCompletion> reduce_scatter(void const* send, void* recv, std::size_t count_per_rank,
                                                             DType element) = 0;
};

// One process's device: which pointers are its memory, and its groups.
class DeviceCommunication {
public:
    virtual ~DeviceCommunication() = default;
    // Whether `pointer` is this device's memory (then the device collectives move it).
    virtual bool holds(void const* pointer) const = 0;
    // The device collectives of the MPI group `group` (of two ranks or more): collective over it, each rank with
    // its own device.
    virtual std::unique_ptr<DeviceGroup> connect(MPI_Comm group) = 0;
    // A group of one moves nothing but still copies a gather's or scatter's input to its output: on the device,
    // queued like a collective.
    virtual void copy(void* to, void const* from, std::size_t bytes) = 0;
};

}  // namespace axonn
