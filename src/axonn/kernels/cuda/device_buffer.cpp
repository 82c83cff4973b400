#include "axonn/kernels/cuda/device_buffer.h"

#include "axonn/kernels/cuda/cuda_check.h"

#include <utility>

namespace axonn::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) check(cudaMalloc(&data_, bytes), "allocate GPU memory");
}

DeviceBuffer::~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);  // a failure here cannot be reported from a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (data_ != nullptr) cudaFree(data_);
        data_ = std::exchange(other.data_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void DeviceBuffer::reserve(std::size_t bytes) {
    if (bytes <= bytes_) return;
    *this = DeviceBuffer();  // freed first, so that the old and the new buffer are never both held
    *this = DeviceBuffer(bytes);
}

bool device_present() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace axonn::cuda
