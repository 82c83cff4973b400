// Sums down the columns of a [N, C] array of values computed on the fly (a bias's or a norm's weight gradient),
// deterministically and in parallel: first each block sums a fixed chunk of rows for its columns, then one thread
// per column adds its chunks in order. The same bits on every run, and about N/rows_per_chunk times more
// parallelism than one thread walking all N rows of a column. Each (n, c) is computed exactly once, so a value
// may also be stored as it is computed (GELU's input gradient, whose column sums are its bias's gradient).
#pragma once

#include "axonn/core/error.h"
#include "axonn/kernels/cuda/launch.cuh"

namespace axonn::cuda {

inline constexpr int column_sum_rows_per_chunk = 64;

// partials[chunk, k, c] = Σ over the chunk's rows n of value(n, c)[k]      grid (ceil(C / block), chunks)
template <int Sums, typename Value>
__global__ void column_partials_kernel(float* partials, std::int64_t N, int C, Value value) {
    int const c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    std::int64_t const first = static_cast<std::int64_t>(blockIdx.y) * column_sum_rows_per_chunk;
    std::int64_t const last = min(first + column_sum_rows_per_chunk, N);
    float sums[Sums] = {};
    for (std::int64_t n = first; n < last; ++n) {
        float terms[Sums];
        value(n, c, terms);
#pragma unroll
        for (int k = 0; k < Sums; ++k) sums[k] += terms[k];
    }
#pragma unroll
    for (int k = 0; k < Sums; ++k) partials[(static_cast<std::int64_t>(blockIdx.y) * Sums + k) * C + c] = sums[k];
}

// targets[k][c] += Σ_chunk partials[chunk, k, c], chunks in order (a null target is skipped)
template <int Sums>
__global__ void column_totals_kernel(float* target0, float* target1, float const* partials, int chunks, int C) {
    AXONN_GRID_STRIDE(c, C) {
        float* const targets[2] = {target0, target1};
#pragma unroll
        for (int k = 0; k < Sums; ++k) {
            if (targets[k] == nullptr) continue;
            float total = targets[k][c];
            for (int chunk = 0; chunk < chunks; ++chunk) total += partials[(static_cast<std::int64_t>(chunk) * Sums + k) * C + c];
            targets[k][c] = total;
        }
    }
}

// target0[c] += Σ_n value(n, c)[0] (and target1[c] += Σ_n value(n, c)[1] when Sums = 2), for n < N.
// value: a functor with a __device__ operator()(n, c, float out[Sums]).
template <int Sums, typename Value>
void add_column_sums(float* target0, float* target1, std::int64_t N, int C, Value value, char const* name,
                     cudaStream_t stream) {
    static_assert(Sums == 1 || Sums == 2, "one or two sums per column");
    if (N == 0 || C == 0) return;
    std::int64_t const chunks = (N + column_sum_rows_per_chunk - 1) / column_sum_rows_per_chunk;
    AXONN_REQUIRE(chunks <= 65535, "{} rows are more than a column sum takes ({}): use a smaller batch per rank", N,
                  65535 * column_sum_rows_per_chunk);
    float* partials = nullptr;
    // Stream-ordered: the pool keeps the memory between steps, so this is no allocation after the first.
    check(cudaMallocAsync(reinterpret_cast<void**>(&partials), static_cast<std::size_t>(chunks) * Sums * C * sizeof(float),
                          stream),
          "allocate column partial sums");
    dim3 const grid(static_cast<unsigned>((C + threads_per_block - 1) / threads_per_block), static_cast<unsigned>(chunks));
    column_partials_kernel<Sums><<<grid, threads_per_block, 0, stream>>>(partials, N, C, value);
    check_launch(name);
    column_totals_kernel<Sums><<<blocks_for(C), threads_per_block, 0, stream>>>(target0, target1, partials,
                                                                               static_cast<int>(chunks), C);
    check_launch(name);
    check(cudaFreeAsync(partials, stream), "free column partial sums");
}

}  // namespace axonn::cuda
