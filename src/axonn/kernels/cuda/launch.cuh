// What every CUDA kernel file shares: grid sizes, a block-wide sum, and the check after a launch.
#pragma once

#include "axonn/core/cuda/cuda_check.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace axonn::cuda {

inline constexpr int threads_per_block = 256;
inline constexpr int warp_size = 32;

// Blocks of threads_per_block to cover n items with one thread each, capped where a grid-stride loop takes over.
inline unsigned blocks_for(std::int64_t n) {
    std::int64_t const blocks = (n + threads_per_block - 1) / threads_per_block;
    return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

// A kernel's fp32 result as its output holds it: itself, or rounded to bf16 as to_bf16 rounds (to nearest, ties to
// even), so that writing bf16 gives exactly what writing fp32 and converting gives.
__device__ inline void store(float* out, std::int64_t i, float value) { out[i] = value; }
__device__ inline void store(__nv_bfloat16* out, std::int64_t i, float value) { out[i] = __float2bfloat16_rn(value); }
// An input as a kernel computes with it: fp32, or a bf16 rounding widened (exactly).
__device__ inline float load(float const* in, std::int64_t i) { return in[i]; }
__device__ inline float load(__nv_bfloat16 const* in, std::int64_t i) { return __bfloat162float(in[i]); }

// Each thread's items of [0, n), striding over the whole grid.
#define AXONN_GRID_STRIDE(i, n)                                                                              \
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n);          \
         i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

template <typename T> __device__ inline T warp_sum(T value) {
    for (int offset = warp_size / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

template <typename T> __device__ inline T warp_max(T value) {
    for (int offset = warp_size / 2; offset > 0; offset /= 2) value = max(value, __shfl_xor_sync(0xffffffffu, value, offset));
    return value;
}

// The sum of `value` over the block (blockDim.x a multiple of 32, at most 1024), returned to every thread.
template <typename T> __device__ inline T block_sum(T value) {
    __shared__ T partial[32];
    int const lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
    value = warp_sum(value);
    __syncthreads();  // partial may still be read by an earlier call
    if (lane == 0) partial[warp] = value;
    __syncthreads();
    int const warps = blockDim.x / warp_size;
    T total = lane < warps ? partial[lane] : T(0);
    return warp_sum(total);
}

template <typename T> __device__ inline T block_max(T value) {
    __shared__ T partial[32];
    int const lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
    value = warp_max(value);
    __syncthreads();
    if (lane == 0) partial[warp] = value;
    __syncthreads();
    int const warps = blockDim.x / warp_size;
    T total = lane < warps ? partial[lane] : partial[0];
    return warp_max(total);
}

}  // namespace axonn::cuda
