// Vocabulary-parallel softmax cross-entropy (kernels/cpu/cross_entropy.h): one block per row for the maximum and
// the sums (the sum of exponentials in double), one thread per row for the losses, one per logit for the
// gradient. The [N,Vp] probabilities are never stored.
#include "axonn/kernels/cpu/cross_entropy.h"
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

#include <cmath>

namespace axonn::cuda {
namespace {

using cpu::ignore_index;

__global__ void cross_entropy_max_kernel(float* row_max, float const* logits, int valid, int Vp_local) {
    float const* row = logits + blockIdx.x * static_cast<std::int64_t>(Vp_local);
    float maximum = -INFINITY;  // a slice of padding only must not win the max
    for (int j = threadIdx.x; j < valid; j += blockDim.x) maximum = fmaxf(maximum, row[j]);
    maximum = block_max(maximum);
    if (threadIdx.x == 0) row_max[blockIdx.x] = maximum;
}

__global__ void cross_entropy_sums_kernel(double* sums, float const* logits, float const* row_max,
                                          std::int32_t const* targets, int valid, int Vp_local, int vocab_begin) {
    std::int64_t const n = blockIdx.x;
    float const* row = logits + n * Vp_local;
    float const maximum = row_max[n];
    double sum = 0;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) sum += expf(row[j] - maximum);
    sum = block_sum(sum);
    if (threadIdx.x == 0) {
        std::int64_t const local_target = static_cast<std::int64_t>(targets[n]) - vocab_begin;
        bool const mine = targets[n] != ignore_index && local_target >= 0 && local_target < valid;
        sums[2 * n] = sum;
        sums[2 * n + 1] = mine ? row[local_target] : 0.0;
    }
}

__global__ void cross_entropy_losses_kernel(float* losses, float* logsumexp, float const* row_max, double const* sums,
                                            std::int32_t const* targets, std::int64_t N) {
    AXONN_GRID_STRIDE(n, N) {
        float const lse = static_cast<float>(row_max[n] + log(sums[2 * n]));
        logsumexp[n] = lse;
        losses[n] = targets[n] == ignore_index ? 0.0f : static_cast<float>(lse - sums[2 * n + 1]);
    }
}

// Writes every column; dlogits may be logits (each element is read, then written, by one thread).
template <typename Out>
__global__ void cross_entropy_backward_kernel(Out* dlogits, float const* logits, float const* logsumexp,
                                              std::int32_t const* targets, float const* dlosses, std::int64_t N,
                                              int valid, int Vp_local, int vocab_begin) {
    AXONN_GRID_STRIDE(i, N * Vp_local) {
        std::int64_t const n = i / Vp_local;
        int const j = static_cast<int>(i % Vp_local);
        bool const ignored = targets[n] == ignore_index;
        float const dloss = ignored ? 0.0f : dlosses[n];
        float d = j < valid ? expf(logits[i] - logsumexp[n]) * dloss : 0.0f;
        if (!ignored && static_cast<std::int64_t>(targets[n]) - vocab_begin == j && j < valid) d -= dloss;
        store(dlogits, i, d);
    }
}

}  // namespace

void cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local,
                       cudaStream_t stream) {
    if (N == 0) return;
    cross_entropy_max_kernel<<<static_cast<unsigned>(N), threads_per_block, 0, stream>>>(row_max, logits, valid,
                                                                                        Vp_local);
    check_launch("cross_entropy_max");
}
void cross_entropy_sums(double* sums, float const* logits, float const* row_max, std::int32_t const* targets,
                        std::int64_t N, int valid, int Vp_local, int vocab_begin, cudaStream_t stream) {
    if (N == 0) return;
    cross_entropy_sums_kernel<<<static_cast<unsigned>(N), threads_per_block, 0, stream>>>(
        sums, logits, row_max, targets, valid, Vp_local, vocab_begin);
    check_launch("cross_entropy_sums");
}
void cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                          std::int32_t const* targets, std::int64_t N, cudaStream_t stream) {
    if (N == 0) return;
    cross_entropy_losses_kernel<<<blocks_for(N), threads_per_block, 0, stream>>>(losses, logsumexp, row_max, sums,
                                                                                targets, N);
    check_launch("cross_entropy_losses");
}
template <typename Out>
void cross_entropy_backward(Out* dlogits, float const* logits, float const* logsumexp, std::int32_t const* targets,
                            float const* dlosses, std::int64_t N, int valid, int Vp_local, int vocab_begin,
                            cudaStream_t stream) {
    if (N == 0) return;
    cross_entropy_backward_kernel<<<blocks_for(N * Vp_local), threads_per_block, 0, stream>>>(
        dlogits, logits, logsumexp, targets, dlosses, N, valid, Vp_local, vocab_begin);
    check_launch("cross_entropy_backward");
}
template void cross_entropy_backward(float*, float const*, float const*, std::int32_t const*, float const*,
                                     std::int64_t, int, int, int, cudaStream_t);
template void cross_entropy_backward(__nv_bfloat16*, float const*, float const*, std::int32_t const*, float const*,
                                     std::int64_t, int, int, int, cudaStream_t);

}  // namespace axonn::cuda
