#include "axonn/core/host_buffer.h"

#include "axonn/core/address_space.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace axonn {

namespace {
constexpr std::size_t huge_page = std::size_t{2} << 20;
}

HostBuffer::HostBuffer(std::size_t floats) : size_(floats) {
    if (floats == 0) return;
    std::size_t const bytes = (floats * sizeof(float) + huge_page - 1) / huge_page * huge_page;
    data_.reset(static_cast<float*>(std::aligned_alloc(huge_page, bytes)));
    // As any allocation's failure: its user names what it was for. Under `ulimit -v`, one that leaves the GEMM
    // library too little room fails too (core/address_space.h).
    if (data_ == nullptr || address_space_shortfall(0)) throw std::bad_alloc();
    ::madvise(data_.get(), bytes, MADV_HUGEPAGE);  // advice only: without huge pages the memory works the same
}

}  // namespace axonn
