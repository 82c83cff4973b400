// Vocabulary-parallel softmax cross-entropy (kernels/cpu/cross_entropy.h): one block per row for the maximum and
// the sums (the sum of exponentials in double), one thread per row for the losses, one per logit for the
// gradient; where one process holds the whole vocabulary, one block per row for all of it. The [N,Vp]
// probabilities are never stored.
#include "axonn/kernels/cpu/cross_entropy.h"
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

#include <cmath>

namespace axonn::cuda {
namespace {

using cpu::ignore_index;

// The row's largest valid logit, in every thread of its block.
__device__ float row_maximum(float const* row, int valid) {
    float maximum = -INFINITY;  // a slice of padding only must not win the max
    for (int j = threadIdx.x; j < valid; j += blockDim.x) maximum = fmaxf(maximum, row[j]);
    return block_max(maximum);
}

// Σ_valid exp(row − maximum), in every thread of the row's block.
__device__ double row_exp_sum(float const* row, float maximum, int valid) {
    double sum = 0;
    for (int j = threadIdx.x; j < valid; j += blockDim.x) sum += expf(row[j] - maximum);
    return block_sum(sum);
}

// The target's logit where this slice holds the target, else 0.
__device__ double target_logit(float const* row, std::int32_t target, int valid, int vocab_begin) {
    std::int64_t const local_target = static_cast<std::int64_t>(target) - vocab_begin;
    bool const mine = target != ignore_index && local_target >= 0 && local_target < valid;
    return mine ? row[local_target] : 0.0;
}

__device__ float row_logsumexp(float maximum, double sum) { return static_cast<float>(maximum + log(sum)); }
__device__ float row_loss(float lse, double target_logit, std::int32_t target) {
    return target == ignore_index ? 0.0f : static_cast<float>(lse - target_logit);
}

// Column j's gradient: (softmax − onehot(target)) · dloss, 0 in padding and ignored rows.
__device__ float logit_gradient(float logit, float lse, std::int32_t target, float dloss, int j, int valid,
                                int vocab_begin) {
    bool const ignored = target == ignore_index;
    float const weight = ignored ? 0.0f : dloss;
    float d = j < valid ? expf(logit - lse) * weight : 0.0f;
    if (!ignored && static_cast<std::int64_t>(target) - vocab_begin == j && j < valid) d -= weight;
    return d;
}

__global__ void cross_entropy_max_kernel(float* row_max, float const* logits, int valid, int Vp_local) {
    float const maximum = row_maximum(logits + blockIdx.x * static_cast<std::int64_t>(Vp_local), valid);
    if (threadIdx.x == 0) row_max[blockIdx.x] = maximum;
}

__global__ void cross_entropy_sums_kernel(double* sums, float const* logits, float const* row_max,
                                          std::int32_t const* targets, int valid, int Vp_local, int vocab_begin) {
    std::int64_t const n = blockIdx.x;
    float const* row = logits + n * Vp_local;
    double const sum = row_exp_sum(row, row_max[n], valid);
    if (threadIdx.x == 0) {
        sums[2 * n] = sum;
        sums[2 * n + 1] = target_logit(row, targets[n], valid, vocab_begin);
    }
}

__global__ void cross_entropy_losses_kernel(float* losses, float* logsumexp, float const* row_max, double const* sums,
                                            std::int32_t const* targets, std::int64_t N) {
    AXONN_GRID_STRIDE(n, N) {
        float const lse = row_logsumexp(row_max[n], sums[2 * n]);
        logsumexp[n] = lse;
        losses[n] = row_loss(lse, sums[2 * n + 1], targets[n]);
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
        store(dlogits, i, logit_gradient(logits[i], logsumexp[n], targets[n], dlosses[n], j, valid, vocab_begin));
    }
}

// The four kernels above for one row in one block, the whole vocabulary here (ids 0 ...): the same arithmetic, the
// row read from memory once (the sums and the gradient find it in L2).
template <typename Out>
__global__ void cross_entropy_forward_backward_kernel(float* losses, float* logsumexp, Out* dlogits,
                                                      float const* logits, std::int32_t const* targets,
                                                      float const* dlosses, int valid, int Vp_local) {
    std::int64_t const n = blockIdx.x;
    float const* row = logits + n * Vp_local;
    float const maximum = row_maximum(row, valid);
    float const lse = row_logsumexp(maximum, row_exp_sum(row, maximum, valid));
    if (threadIdx.x == 0) {
        logsumexp[n] = lse;
        losses[n] = row_loss(lse, target_logit(row, targets[n], valid, 0), targets[n]);
    }
    __syncthreads();  // the target's logit is read before any thread overwrites it (dlogits may be logits)
    for (int j = threadIdx.x; j < Vp_local; j += blockDim.x) {
        store(dlogits, n * Vp_local + j, logit_gradient(row[j], lse, targets[n], dlosses[n], j, valid, 0));
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
template <typename Out>
void cross_entropy_forward_backward(float* losses, float* logsumexp, Out* dlogits, float const* logits,
                                    std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                                    int Vp_local, cudaStream_t stream) {
    if (N == 0) return;
    cross_entropy_forward_backward_kernel<<<static_cast<unsigned>(N), threads_per_block, 0, stream>>>(
        losses, logsumexp, dlogits, logits, targets, dlosses, valid, Vp_local);
    check_launch("cross_entropy_forward_backward");
}
template void cross_entropy_forward_backward(float*, float*, float*, float const*, std::int32_t const*, float const*,
                                             std::int64_t, int, int, cudaStream_t);
template void cross_entropy_forward_backward(float*, float*, __nv_bfloat16*, float const*, std::int32_t const*,
                                             float const*, std::int64_t, int, int, cudaStream_t);

}  // namespace axonn::cuda
