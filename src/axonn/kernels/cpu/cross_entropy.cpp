#include "axonn/kernels/cpu/cross_entropy.h"

#include "axonn/core/bfloat16.h"
#include "axonn/kernels/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace axonn::cpu {

namespace {

// The target's column in this slice, or −1 where the row is ignored (its dloss is then 0).
std::int64_t local_target_of(std::int32_t target, int vocab_begin) {
    return target == ignore_index ? -1 : static_cast<std::int64_t>(target) - vocab_begin;
}

// The largest of a row's valid columns (a slice of padding only must not win the max).
template <typename T> T row_maximum(T const* row, int valid) {
    return maximum_of(row, valid, -std::numeric_limits<T>::infinity());
}

// sums[2] = {Σ_valid exp(row − maximum), the target's logit if this slice holds the target, else 0}
template <typename T>
void row_sums(double* sums, T const* row, T maximum, std::int32_t target, int valid, int vocab_begin) {
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < valid; ++j) sum += exp_approx(row[j] - maximum);
    std::int64_t const local_target = local_target_of(target, vocab_begin);
    bool const mine = local_target >= 0 && local_target < valid;
    sums[0] = sum;
    sums[1] = mine ? row[local_target] : 0.0;
}

// drow[Vp_local] = (softmax − onehot(target)) · dloss for one row of logits (0 in padded columns); dloss is 0 for
// an ignored row, and local_target outside 0 ... valid−1 when another slice holds the target.
template <typename T>
void backward_row(T* drow, T const* row, T lse, T dloss, std::int64_t local_target, int valid, int Vp_local) {
#pragma omp simd
    for (int j = 0; j < valid; ++j) drow[j] = exp_approx(row[j] - lse) * dloss;
    for (int j = valid; j < Vp_local; ++j) drow[j] = 0;
    if (local_target >= 0 && local_target < valid) drow[local_target] -= dloss;
}

// loss = log(Σ exp) + maximum − the target's logit (0 where ignored), and logsumexp, kept for the backward.
template <typename T>
void row_loss(T& loss, T& logsumexp, T maximum, double const* sums, std::int32_t target) {
    logsumexp = static_cast<T>(maximum + std::log(sums[0]));
    loss = target == ignore_index ? T(0) : static_cast<T>(logsumexp - sums[1]);
}

// backward_row's, written as its bf16 rounding: columns computed in fp32 a block at a time, in a buffer that stays
// in L1 (4 KiB), then rounded. The block is a multiple of the vector width, so that the blocks' vector loops cover
// the columns as the whole row's fp32 loop does.
void backward_row(bfloat16* drow, float const* row, float lse, float dloss, std::int64_t local_target, int valid,
                  int Vp_local) {
    constexpr int block = 1024;
    for (int j0 = 0; j0 < Vp_local; j0 += block) {
        int const width = std::min(block, Vp_local - j0);
        alignas(64) float values[block];
        backward_row(values, row + j0, lse, dloss, local_target - j0, std::clamp(valid - j0, 0, width), width);
#pragma omp simd
        for (int j = 0; j < width; ++j) drow[j0 + j] = to_bfloat16(values[j]);
    }
}

// One row's gradient from its target (an ignored row's is 0) and its weight in the loss: fp32, or its bf16 rounding.
template <typename Out, typename T>
void row_gradient(Out* drow, T const* row, T lse, std::int32_t target, T dloss, int valid, int Vp_local,
                  int vocab_begin) {
    backward_row(drow, row, lse, target == ignore_index ? T(0) : dloss, local_target_of(target, vocab_begin), valid,
                 Vp_local);
}

}  // namespace

template <typename T> void cross_entropy_max(T* row_max, T const* logits, std::int64_t N, int valid, int Vp_local) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) row_max[n] = row_maximum(logits + n * Vp_local, valid);
}

template <typename T>
void cross_entropy_sums(double* sums, T const* logits, T const* row_max, std::int32_t const* targets, std::int64_t N,
                        int valid, int Vp_local, int vocab_begin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        row_sums(sums + 2 * n, logits + n * Vp_local, row_max[n], targets[n], valid, vocab_begin);
    }
}

template <typename T>
void cross_entropy_max_and_sums(T* row_max, double* sums, T const* logits, std::int32_t const* targets, std::int64_t N,
                                int valid, int Vp_local, int vocab_begin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* row = logits + n * Vp_local;
        row_max[n] = row_maximum(row, valid);
        row_sums(sums + 2 * n, row, row_max[n], targets[n], valid, vocab_begin);
    }
}

template <typename T>
void cross_entropy_losses(T* losses, T* logsumexp, T const* row_max, double const* sums, std::int32_t const* targets,
                          std::int64_t N) {
    for (std::int64_t n = 0; n < N; ++n) row_loss(losses[n], logsumexp[n], row_max[n], sums + 2 * n, targets[n]);
}

template <typename T>
void cross_entropy_backward(T* dlogits, T const* logits, T const* logsumexp, std::int32_t const* targets,
                            T const* dlosses, std::int64_t N, int valid, int Vp_local, int vocab_begin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        row_gradient(dlogits + n * Vp_local, logits + n * Vp_local, logsumexp[n], targets[n], dlosses[n], valid,
                     Vp_local, vocab_begin);
    }
}

void cross_entropy_backward(bfloat16* dlogits, float const* logits, float const* logsumexp,
                            std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                            int Vp_local, int vocab_begin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        row_gradient(dlogits + n * Vp_local, logits + n * Vp_local, logsumexp[n], targets[n], dlosses[n], valid,
                     Vp_local, vocab_begin);
    }
}

template <typename Out>
void cross_entropy_forward_backward(float* losses, float* logsumexp, Out* dlogits, float const* logits,
                                    std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                                    int Vp_local) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        float const* row = logits + n * Vp_local;
        float const maximum = row_maximum(row, valid);
        double sums[2];
        row_sums(sums, row, maximum, targets[n], valid, 0);
        row_loss(losses[n], logsumexp[n], maximum, sums, targets[n]);
        row_gradient(dlogits + n * Vp_local, row, logsumexp[n], targets[n], dlosses[n], valid, Vp_local, 0);
    }
}

template void cross_entropy_max<float>(float*, float const*, std::int64_t, int, int);
template void cross_entropy_max<double>(double*, double const*, std::int64_t, int, int);
template void cross_entropy_sums<float>(double*, float const*, float const*, std::int32_t const*, std::int64_t, int,
                                        int, int);
template void cross_entropy_sums<double>(double*, double const*, double const*, std::int32_t const*, std::int64_t,
                                         int, int, int);
template void cross_entropy_max_and_sums<float>(float*, double*, float const*, std::int32_t const*, std::int64_t,
                                                int, int, int);
template void cross_entropy_max_and_sums<double>(double*, double*, double const*, std::int32_t const*, std::int64_t,
                                                 int, int, int);
template void cross_entropy_losses<float>(float*, float*, float const*, double const*, std::int32_t const*,
                                          std::int64_t);
template void cross_entropy_losses<double>(double*, double*, double const*, double const*, std::int32_t const*,
                                           std::int64_t);
template void cross_entropy_backward<float>(float*, float const*, float const*, std::int32_t const*, float const*,
                                            std::int64_t, int, int, int);
template void cross_entropy_backward<double>(double*, double const*, double const*, std::int32_t const*,
                                             double const*, std::int64_t, int, int, int);
template void cross_entropy_forward_backward<float>(float*, float*, float*, float const*, std::int32_t const*,
                                                    float const*, std::int64_t, int, int);
template void cross_entropy_forward_backward<bfloat16>(float*, float*, bfloat16*, float const*, std::int32_t const*,
                                                       float const*, std::int64_t, int, int);

}  // namespace axonn::cpu
