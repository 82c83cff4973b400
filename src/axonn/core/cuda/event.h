// A CUDA event, owned, and the GPU time of work queued on a stream, read between two of them.
#pragma once

#include "axonn/core/cuda/cuda_check.h"

#include <cuda_runtime.h>

namespace axonn::cuda {

class Event {
public:
    // timing: whether cudaEventElapsedTime may read it (an event that only orders streams is cheaper without).
    explicit Event(bool timing = false) {
        check(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming), "create an event");
    }
    ~Event() { cudaEventDestroy(event_); }  // its resources are released once the streams are past it
    Event(Event const&) = delete;
    Event& operator=(Event const&) = delete;

    cudaEvent_t get() const { return event_; }
    // Marks the point `stream` has reached: what it has queued so far.
    void record(cudaStream_t stream) const { check(cudaEventRecord(event_, stream), "record an event"); }

private:
    cudaEvent_t event_ = nullptr;
};

// Milliseconds the GPU takes for what `work()` queues on `stream`; waits for it.
template <typename Work>
float milliseconds_on(cudaStream_t stream, Work&& work) {
    Event const start(true), stop(true);
    start.record(stream);
    work();
    stop.record(stream);
    check(cudaEventSynchronize(stop.get()), "time work on the GPU");
    float milliseconds = 0;
    check(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "time work on the GPU");
    return milliseconds;
}

}  // namespace axonn::cuda
