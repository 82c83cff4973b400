// A small contiguous tensor: a shape, a dtype and 64-byte aligned storage that it owns.
// The model keeps its parameters and activations in a few large tensors and hands out named views into them
// (llm.c style), so this type stays deliberately simple: no strides, no autograd, no broadcasting.
#pragma once

#include "axonn/core/bfloat16.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace axonn {

// f16 is only ever read from Hugging Face weights, which are widened to f32 as they are read.
enum class DType : std::uint8_t { f32, f64, bf16, i32, f16 };

std::size_t dtype_size(DType dtype);
std::string dtype_name(DType dtype);
// A GEMM precision as --precision spells it: "fp32" or "bf16".
std::string precision_name(DType precision);

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bf16; }

using Shape = std::vector<std::int64_t>;

// Bytes held by all live tensors, and the most they ever held: what the memory model's predictions are checked
// against (the process's RSS adds the MPI, OpenMP and oneDNN runtimes on top).
std::int64_t tensor_bytes_in_use();
std::int64_t tensor_bytes_peak();
void reset_tensor_bytes_peak();

std::int64_t shape_numel(Shape const& shape);
// The elements of a scratch buffer that may be needed for none: every tensor made holds at least one.
inline std::int64_t buffer_numel(std::int64_t numel) { return numel > 1 ? numel : 1; }
std::string shape_string(Shape const& shape);

// Where a tensor's storage is: the host's memory, or a device's (a GPU's), which the host cannot read directly.
enum class Memory : std::uint8_t { host, device };

// How device memory is allocated, zeroed and freed. core knows no device API: a device backend installs these
// when it is made (kernels/cuda/cuda_backend.cpp), before any tensor asks for device memory.
struct DeviceAllocator {
    void* (*allocate)(std::size_t bytes) = nullptr;  // null when out of memory
    void (*zero)(void* pointer, std::size_t bytes) = nullptr;
    void (*release)(void* pointer) = nullptr;
};
void set_device_allocator(DeviceAllocator allocator);

// Frees a tensor's storage and takes its bytes off the in-use count.
struct AlignedFree {
    std::size_t bytes = 0;                    // as allocated
    void (*release)(void*) = nullptr;         // a device allocator's, as it was when the tensor was made; else free()
    void operator()(void* pointer) const;
};

class Tensor {
public:
    static constexpr std::size_t alignment = 64;  // one cache line, one AVX-512 register

    Tensor() = default;
    Tensor(Shape shape, DType dtype, Memory memory = Memory::host);  // zero-filled

    Shape const& shape() const { return shape_; }
    DType dtype() const { return dtype_; }
    std::int64_t numel() const { return numel_; }
    std::size_t bytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }
    Memory memory() const { return memory_; }

    // The storage's address, in the tensor's memory (a device pointer for a device tensor: for kernels only).
    template <typename T> T* data() { check_dtype(dtype_of<T>()); return static_cast<T*>(storage_.get()); }
    template <typename T> T const* data() const { check_dtype(dtype_of<T>()); return static_cast<T const*>(storage_.get()); }
    // The elements, for the host to read and write: a host tensor's only.
    template <typename T> std::span<T> span() { check_host(); return {data<T>(), static_cast<std::size_t>(numel_)}; }
    template <typename T> std::span<T const> span() const {
        check_host();
        return {data<T>(), static_cast<std::size_t>(numel_)};
    }

    // Untyped bytes, for I/O that moves whole tensors regardless of dtype.
    void* raw_data() { return storage_.get(); }
    void const* raw_data() const { return storage_.get(); }

    void zero();

private:
    void check_dtype(DType requested) const;
    void check_host() const;

    Shape shape_;
    DType dtype_ = DType::f32;
    Memory memory_ = Memory::host;
    std::int64_t numel_ = 0;
    std::unique_ptr<void, AlignedFree> storage_;
};

// Makes `tensor` hold at least `numel` elements of `dtype` in `memory` (a scratch buffer that grows to fit): a
// new zeroed one when it is smaller, the old one freed first so that both are never held; else it stays as is.
void grow_to(Tensor& tensor, std::int64_t numel, DType dtype, Memory memory = Memory::host);

}  // namespace axonn
