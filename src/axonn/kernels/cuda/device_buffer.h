// Memory on the GPU that one object owns: cudaMalloc'd (never managed memory, which can hang a GPU asked for more
// than it has), freed when the owner goes. Move-only.
#pragma once

#include <cstddef>

namespace axonn::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes);  // uninitialised
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(DeviceBuffer const&) = delete;
    DeviceBuffer& operator=(DeviceBuffer const&) = delete;

    std::size_t bytes() const { return bytes_; }
    void* data() { return data_; }
    void const* data() const { return data_; }
    template <typename T> T* as() { return static_cast<T*>(data_); }
    template <typename T> T const* as() const { return static_cast<T const*>(data_); }

    // Grows (without keeping the contents) to hold at least `bytes`.
    void reserve(std::size_t bytes);

private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

// Whether this process sees a CUDA device: the GPU tests skip where it does not.
bool device_present();

}  // namespace axonn::cuda
