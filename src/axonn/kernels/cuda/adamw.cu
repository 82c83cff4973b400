// AdamW over a flat range of parameters (PyTorch's update, as kernels/cpu/adamw.cpp), and the squared norm for
// gradient clipping, summed in a fixed order so that every run clips by the same coefficient.
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

namespace axonn::cuda {
namespace {

__global__ void adamw_kernel(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWConstants step,
                             __nv_bfloat16* param_bf16) {
    AXONN_GRID_STRIDE(i, n) {
        float const g = grad[i] * step.grad_scale;
        float const m_i = step.beta1 * m[i] + (1.0f - step.beta1) * g;
        float const v_i = step.beta2 * v[i] + (1.0f - step.beta2) * g * g;
        m[i] = m_i;
        v[i] = v_i;
        float const p = param[i] * step.decay_factor - step.step_size * m_i / (sqrtf(v_i) * step.inverse_sqrt_bc2 + step.eps);
        param[i] = p;
        if (param_bf16 != nullptr) param_bf16[i] = __float2bfloat16_rn(p);
    }
}

__global__ void sum_of_squares_kernel(double* partials, float const* x, std::int64_t n) {
    double sum = 0;
    AXONN_GRID_STRIDE(i, n) sum += static_cast<double>(x[i]) * x[i];
    sum = block_sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

}  // namespace

void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWConstants const& step,
                  __nv_bfloat16* param_bf16, cudaStream_t stream) {
    if (n == 0) return;
    adamw_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(param, grad, m, v, n, step, param_bf16);
    check_launch("adamw_update");
}

void sum_of_squares_partials(double* partials, float const* x, std::int64_t n, cudaStream_t stream) {
    sum_of_squares_kernel<<<sum_of_squares_blocks, threads_per_block, 0, stream>>>(partials, x, n);
    check_launch("sum_of_squares");
}

}  // namespace axonn::cuda
