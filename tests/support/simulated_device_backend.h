// The CPU backend with its buffers treated as a device's, for testing the model's device path on any machine:
// tensors made for it are device tensors (host memory, but the host code may not read them through span()), and
// everything the model moves between the host and the backend goes through copy_to_host and copy_from_host. The
// kernels are the CPU's, so a model on it must give the CPU backend's results bit for bit.
#pragma once

#include "axonn/kernels/cpu_backend.h"

#include <cstdlib>
#include <cstring>

namespace axonn::testing {

class SimulatedDeviceBackend final : public CpuBackend {
public:
    explicit SimulatedDeviceBackend(DType gemm_dtype = DType::f32) : CpuBackend(gemm_dtype) {
        set_device_allocator({allocate, zero_memory, release});
    }
    Memory memory() const override { return Memory::device; }

private:
    static void* allocate(std::size_t bytes) { return std::aligned_alloc(Tensor::alignment, bytes); }
    static void zero_memory(void* pointer, std::size_t bytes) { std::memset(pointer, 0, bytes); }
    static void release(void* pointer) { std::free(pointer); }
};

}  // namespace axonn::testing
