// Host memory for large copies made at once, such as a checkpoint's ranges: aligned to 2 MiB and advised to the
// kernel as huge pages (madvise MADV_HUGEPAGE; a no-op where transparent huge pages are off), so that the first
// touch of each 2 MiB faults once instead of 512 times. On a virtual machine a fault is a trap to the hypervisor:
// a profile of a checkpoint save there had those traps, and the zeroing of fresh memory, near its top.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>

namespace axonn {

class HostBuffer {
public:
    HostBuffer() = default;
    explicit HostBuffer(std::size_t floats);  // uninitialized; an Error where memory runs out

    std::span<float> floats() const { return {data_.get(), size_}; }

private:
    struct Free {
        void operator()(float* pointer) const { std::free(pointer); }
    };
    std::unique_ptr<float, Free> data_;
    std::size_t size_ = 0;
};

}  // namespace axonn
