// LayerNorm and RMSNorm, in the phases of kernels/cpu/layernorm.h and rmsnorm.h: per-row statistics in double
// (one block per row), the normalisation element-wise, and the parameters' gradients as column sums.
#include "axonn/kernels/cpu/layernorm.h"
#include "axonn/kernels/cuda/column_sum.cuh"
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

namespace axonn::cuda {
namespace {

using cpu::layernorm_eps;

// stats[N,2] = {Σ x, Σ x²}
__global__ void layernorm_statistics_kernel(double* stats, float const* inp, int C) {
    float const* x = inp + blockIdx.x * static_cast<std::int64_t>(C);
    double sum = 0, squares = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        sum += x[c];
        squares += static_cast<double>(x[c]) * x[c];
    }
    sum = block_sum(sum);
    squares = block_sum(squares);
    if (threadIdx.x == 0) {
        stats[2 * blockIdx.x] = sum;
        stats[2 * blockIdx.x + 1] = squares;
    }
}

template <typename Out>
__global__ void layernorm_forward_kernel(Out* out, float* mean, float* rstd, float const* inp, float const* weight,
                                         float const* bias, double const* stats, int C, int C_total) {
    std::int64_t const n = blockIdx.x;
    double const m = stats[2 * n] / C_total;
    double const variance = max(0.0, stats[2 * n + 1] / C_total - m * m);
    float const s = static_cast<float>(1.0 / sqrt(variance + layernorm_eps));
    float const mf = static_cast<float>(m);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        store(out, n * C + c, (inp[n * C + c] - mf) * s * weight[c] + bias[c]);
    }
    if (threadIdx.x == 0) {
        mean[n] = mf;
        rstd[n] = s;
    }
}

// stats[N,2] = {Σ dnorm, Σ dnorm · norm} with dnorm = dout · weight
__global__ void layernorm_backward_statistics_kernel(double* stats, float const* dout, float const* inp,
                                                     float const* weight, float const* mean, float const* rstd, int C) {
    std::int64_t const n = blockIdx.x;
    double dnorm_sum = 0, dnorm_norm_sum = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float const norm = (inp[n * C + c] - mean[n]) * rstd[n];
        float const dnorm = dout[n * C + c] * weight[c];
        dnorm_sum += dnorm;
        dnorm_norm_sum += static_cast<double>(dnorm) * norm;
    }
    dnorm_sum = block_sum(dnorm_sum);
    dnorm_norm_sum = block_sum(dnorm_norm_sum);
    if (threadIdx.x == 0) {
        stats[2 * n] = dnorm_sum;
        stats[2 * n + 1] = dnorm_norm_sum;
    }
}

__global__ void layernorm_backward_input_kernel(float* dinp, float const* dout, float const* inp, float const* weight,
                                                float const* mean, float const* rstd, double const* stats,
                                                std::int64_t N, int C, int C_total) {
    AXONN_GRID_STRIDE(i, N * C) {
        std::int64_t const n = i / C;
        int const c = static_cast<int>(i % C);
        float const norm = (inp[i] - mean[n]) * rstd[n];
        float const dnorm_mean = static_cast<float>(stats[2 * n] / C_total);
        float const dnorm_norm_mean = static_cast<float>(stats[2 * n + 1] / C_total);
        dinp[i] += (dout[i] * weight[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
    }
}

// LayerNorm's parameter gradient terms of row n, channel c: {norm · dout, dout}, norm = (x − mean) · rstd.
struct NormParameterTerms {
    float const *dout, *inp, *mean, *rstd;
    int C;
    __device__ void operator()(std::int64_t n, int c, float* terms) const {
        float const dy = dout[n * C + c];
        float const norm = (inp[n * C + c] - mean[n]) * rstd[n];
        terms[0] = norm * dy;
        terms[1] = dy;
    }
};
// RMSNorm's: {x · rstd · dout}.
struct RmsNormParameterTerms {
    float const *dout, *inp, *rstd;
    int C;
    __device__ void operator()(std::int64_t n, int c, float* terms) const {
        terms[0] = inp[n * C + c] * rstd[n] * dout[n * C + c];
    }
};

// stats[N] = Σ x²
__global__ void rmsnorm_statistics_kernel(double* stats, float const* inp, int C) {
    float const* x = inp + blockIdx.x * static_cast<std::int64_t>(C);
    double squares = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) squares += static_cast<double>(x[c]) * x[c];
    squares = block_sum(squares);
    if (threadIdx.x == 0) stats[blockIdx.x] = squares;
}

// sum = a + b, then the row's statistics as the two kernels above sum them: stats[N,2] = {Σ x, Σ x²} for
// LayerNorm, stats[N] = Σ x² for RMSNorm (the block's choice is uniform, so every thread takes part in its sums).
__global__ void residual_norm_statistics_kernel(float* sum, float const* a, float const* b, double* stats, int C,
                                                bool layernorm) {
    std::int64_t const row = blockIdx.x * static_cast<std::int64_t>(C);
    double total = 0, squares = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float const x = a[row + c] + b[row + c];
        sum[row + c] = x;
        total += x;
        squares += static_cast<double>(x) * x;
    }
    squares = block_sum(squares);
    if (!layernorm) {
        if (threadIdx.x == 0) stats[blockIdx.x] = squares;
        return;
    }
    total = block_sum(total);
    if (threadIdx.x == 0) {
        stats[2 * blockIdx.x] = total;
        stats[2 * blockIdx.x + 1] = squares;
    }
}

template <typename Out>
__global__ void rmsnorm_forward_kernel(Out* out, float* rstd, float const* inp, float const* weight,
                                       double const* stats, int C, int C_total, double eps) {
    std::int64_t const n = blockIdx.x;
    float const s = static_cast<float>(1.0 / sqrt(stats[n] / C_total + eps));
    for (int c = threadIdx.x; c < C; c += blockDim.x) store(out, n * C + c, inp[n * C + c] * s * weight[c]);
    if (threadIdx.x == 0) rstd[n] = s;
}

// stats[N] = Σ (dout · weight) · norm
__global__ void rmsnorm_backward_statistics_kernel(double* stats, float const* dout, float const* inp,
                                                   float const* weight, float const* rstd, int C) {
    std::int64_t const n = blockIdx.x;
    double dnorm_norm = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        dnorm_norm += static_cast<double>(dout[n * C + c] * weight[c]) * (inp[n * C + c] * rstd[n]);
    }
    dnorm_norm = block_sum(dnorm_norm);
    if (threadIdx.x == 0) stats[n] = dnorm_norm;
}

__global__ void rmsnorm_backward_input_kernel(float* dinp, float const* dout, float const* inp, float const* weight,
                                              float const* rstd, double const* stats, std::int64_t N, int C,
                                              int C_total) {
    AXONN_GRID_STRIDE(i, N * C) {
        std::int64_t const n = i / C;
        int const c = static_cast<int>(i % C);
        float const norm = inp[i] * rstd[n];
        float const dnorm_norm_mean = static_cast<float>(stats[n] / C_total);
        dinp[i] += (dout[i] * weight[c] - norm * dnorm_norm_mean) * rstd[n];
    }
}

unsigned rows(std::int64_t N) { return static_cast<unsigned>(N); }

}  // namespace

void residual_norm_statistics(float* sum, float const* a, float const* b, double* stats, std::int64_t N, int C,
                              bool layernorm, cudaStream_t stream) {
    if (N == 0) return;
    residual_norm_statistics_kernel<<<rows(N), threads_per_block, 0, stream>>>(sum, a, b, stats, C, layernorm);
    check_launch("residual_norm_statistics");
}
void layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C, cudaStream_t stream) {
    if (N == 0) return;
    layernorm_statistics_kernel<<<rows(N), threads_per_block, 0, stream>>>(stats, inp, C);
    check_launch("layernorm_statistics");
}
template <typename Out>
void layernorm_forward(Out* out, float* mean, float* rstd, float const* inp, float const* weight, float const* bias,
                       double const* stats, std::int64_t N, int C, int C_total, cudaStream_t stream) {
    if (N == 0) return;
    layernorm_forward_kernel<<<rows(N), threads_per_block, 0, stream>>>(out, mean, rstd, inp, weight, bias, stats, C,
                                                                       C_total);
    check_launch("layernorm_forward");
}
template void layernorm_forward(float*, float*, float*, float const*, float const*, float const*, double const*,
                                std::int64_t, int, int, cudaStream_t);
template void layernorm_forward(__nv_bfloat16*, float*, float*, float const*, float const*, float const*,
                                double const*, std::int64_t, int, int, cudaStream_t);
void layernorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                   float const* mean, float const* rstd, std::int64_t N, int C, cudaStream_t stream) {
    if (N == 0) return;
    layernorm_backward_statistics_kernel<<<rows(N), threads_per_block, 0, stream>>>(stats, dout, inp, weight, mean,
                                                                                   rstd, C);
    check_launch("layernorm_backward_statistics");
}
void layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                        float const* weight, float const* mean, float const* rstd, double const* stats,
                        std::int64_t N, int C, int C_total, cudaStream_t stream) {
    layernorm_backward_input_kernel<<<blocks_for(N * C), threads_per_block, 0, stream>>>(
        dinp, dout, inp, weight, mean, rstd, stats, N, C, C_total);
    check_launch("layernorm_backward");
    add_column_sums<2>(dweight, dbias, N, C, NormParameterTerms{dout, inp, mean, rstd, C},
                       "layernorm_backward (parameters)", stream);
}
void rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C, cudaStream_t stream) {
    if (N == 0) return;
    rmsnorm_statistics_kernel<<<rows(N), threads_per_block, 0, stream>>>(stats, inp, C);
    check_launch("rmsnorm_statistics");
}
template <typename Out>
void rmsnorm_forward(Out* out, float* rstd, float const* inp, float const* weight, double const* stats,
                     std::int64_t N, int C, int C_total, double eps, cudaStream_t stream) {
    if (N == 0) return;
    rmsnorm_forward_kernel<<<rows(N), threads_per_block, 0, stream>>>(out, rstd, inp, weight, stats, C, C_total, eps);
    check_launch("rmsnorm_forward");
}
template void rmsnorm_forward(float*, float*, float const*, float const*, double const*, std::int64_t, int, int,
                              double, cudaStream_t);
template void rmsnorm_forward(__nv_bfloat16*, float*, float const*, float const*, double const*, std::int64_t, int,
                              int, double, cudaStream_t);
void rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                 float const* rstd, std::int64_t N, int C, cudaStream_t stream) {
    if (N == 0) return;
    rmsnorm_backward_statistics_kernel<<<rows(N), threads_per_block, 0, stream>>>(stats, dout, inp, weight, rstd, C);
    check_launch("rmsnorm_backward_statistics");
}
void rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp, float const* weight,
                      float const* rstd, double const* stats, std::int64_t N, int C, int C_total,
                      cudaStream_t stream) {
    rmsnorm_backward_input_kernel<<<blocks_for(N * C), threads_per_block, 0, stream>>>(dinp, dout, inp, weight, rstd,
                                                                                      stats, N, C, C_total);
    check_launch("rmsnorm_backward");
    add_column_sums<1>(dweight, nullptr, N, C, RmsNormParameterTerms{dout, inp, rstd, C},
                       "rmsnorm_backward (parameters)", stream);
}

}  // namespace axonn::cuda
