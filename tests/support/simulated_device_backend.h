// The CPU backend with its buffers treated as a device's, for testing the model's device path on any machine:
// tensors made for it are device tensors (host memory, but the host code may not read them through span()), and
// everything the model moves between the host and the backend goes through copy_to_host and copy_from_host. The
// kernels are the CPU's, so a model on it must give the CPU backend's results bit for bit. It remembers what it
// allocated, so that the simulated device's collectives (simulated_device_communication.h) know its memory.
#pragma once

#include "axonn/kernels/cpu_backend.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace axonn::testing {

class SimulatedDeviceBackend final : public CpuBackend {
public:
    explicit SimulatedDeviceBackend(DType gemm_dtype = DType::f32) : CpuBackend(gemm_dtype) {
        set_device_allocator({allocate, zero_memory, release});
    }
    Memory memory() const override { return Memory::device; }

    // Whether `pointer` lies in a block this backend allocated and has not released.
    static bool allocated(void const* pointer) {
        auto const address = reinterpret_cast<std::uintptr_t>(pointer);
        std::lock_guard const lock(blocks_mutex());
        auto const after = blocks().upper_bound(address);
        if (after == blocks().begin()) return false;
        auto const block = std::prev(after);
        return address < block->first + block->second;
    }

private:
    static void* allocate(std::size_t bytes) {
        void* const pointer = std::aligned_alloc(Tensor::alignment, bytes);
        std::lock_guard const lock(blocks_mutex());
        blocks()[reinterpret_cast<std::uintptr_t>(pointer)] = bytes;
        return pointer;
    }
    static void zero_memory(void* pointer, std::size_t bytes) { std::memset(pointer, 0, bytes); }
    static void release(void* pointer) {
        {
            std::lock_guard const lock(blocks_mutex());
            blocks().erase(reinterpret_cast<std::uintptr_t>(pointer));
        }
        std::free(pointer);
    }
    // Start address → bytes of every live block.
    static std::map<std::uintptr_t, std::size_t>& blocks() {
        static std::map<std::uintptr_t, std::size_t> live;
        return live;
    }
    static std::mutex& blocks_mutex() {
        static std::mutex mutex;
        return mutex;
    }
};

}  // namespace axonn::testing
