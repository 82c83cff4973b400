#include "axonn/core/tensor.h"

#include "axonn/core/address_space.h"
#include "axonn/core/error.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace axonn {

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f32: return 4;
        case DType::f64: return 8;
        case DType::bf16: return 2;
        case DType::i32: return 4;
        case DType::f16: return 2;
    }
    throw InternalError(fmt::format("unknown dtype {}", static_cast<int>(dtype)));
}

std::string dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f32: return "f32";
        case DType::f64: return "f64";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::f16: return "f16";
    }
    throw InternalError(fmt::format("unknown dtype {}", static_cast<int>(dtype)));
}

std::string precision_name(DType precision) { return precision == DType::bf16 ? "bf16" : "fp32"; }

std::int64_t shape_numel(Shape const& shape) {
    std::int64_t numel = 1;
    for (auto extent : shape) {
        AXONN_INVARIANT(extent >= 0, "negative extent {} in shape {}", extent, shape_string(shape));
        numel *= extent;
    }
    return numel;
}

std::string shape_string(Shape const& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

namespace {

std::atomic<std::int64_t> bytes_in_use{0};
std::atomic<std::int64_t> bytes_peak{0};

void count_allocation(std::int64_t bytes) {
    std::int64_t const now = bytes_in_use += bytes;
    std::int64_t peak = bytes_peak.load();
    while (now > peak && !bytes_peak.compare_exchange_weak(peak, now)) {
    }
}

DeviceAllocator device_allocator;

}  // namespace

void set_device_allocator(DeviceAllocator allocator) { device_allocator = allocator; }

std::int64_t tensor_bytes_in_use() { return bytes_in_use.load(); }
std::int64_t tensor_bytes_peak() { return bytes_peak.load(); }
void reset_tensor_bytes_peak() { bytes_peak.store(bytes_in_use.load()); }

void AlignedFree::operator()(void* pointer) const {
    bytes_in_use -= static_cast<std::int64_t>(bytes);
    if (release != nullptr) {
        release(pointer);
    } else {
        std::free(pointer);
    }
}

Tensor::Tensor(Shape shape, DType dtype, Memory memory)
    : shape_(std::move(shape)), dtype_(dtype), memory_(memory), numel_(shape_numel(shape_)) {
    // aligned_alloc wants a size that is a multiple of the alignment (a device's allocator aligns to 256 bytes).
    std::size_t const rounded = std::max<std::size_t>(alignment, (bytes() + alignment - 1) / alignment * alignment);
    void* pointer = nullptr;
    if (memory == Memory::device) {
        AXONN_INVARIANT(device_allocator.allocate != nullptr, "a device tensor of shape {} before any device backend",
                        shape_string(shape_));
        pointer = device_allocator.allocate(rounded);
    } else {
        pointer = std::aligned_alloc(alignment, rounded);
    }
    // Under `ulimit -v`, a tensor that leaves the GEMM library too little room fails as one that found none.
    std::optional<std::string> const shortfall =
        memory == Memory::host ? address_space_shortfall(pointer == nullptr ? rounded : 0) : std::nullopt;
    if (pointer != nullptr && shortfall) {
        std::free(pointer);
        pointer = nullptr;
    }
    AXONN_REQUIRE(pointer != nullptr, "out of {} memory allocating a tensor of shape {} ({} bytes){}",
                  memory == Memory::device ? "device" : "host", shape_string(shape_), rounded,
                  shortfall ? ": " + *shortfall : std::string());
    storage_ = std::unique_ptr<void, AlignedFree>(
        pointer, AlignedFree{bytes(), memory == Memory::device ? device_allocator.release : nullptr});
    count_allocation(static_cast<std::int64_t>(bytes()));
    zero();
}

void Tensor::zero() {
    if (!storage_) return;
    if (memory_ == Memory::device) {
        device_allocator.zero(storage_.get(), bytes());
    } else {
        std::memset(storage_.get(), 0, bytes());
    }
}

void grow_to(Tensor& tensor, std::int64_t numel, DType dtype, Memory memory) {
    if (tensor.numel() >= numel) return;
    tensor = Tensor();
    tensor = Tensor({numel}, dtype, memory);
}

void Tensor::check_host() const {
    AXONN_INVARIANT(memory_ == Memory::host, "the host read a tensor of shape {} in device memory",
                    shape_string(shape_));
}

void Tensor::check_dtype(DType requested) const {
    AXONN_INVARIANT(requested == dtype_, "tensor of dtype {} read as {}", dtype_name(dtype_), dtype_name(requested));
}

}  // namespace axonn
