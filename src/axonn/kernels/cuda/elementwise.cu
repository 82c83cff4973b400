// Element-wise kernels: conversions, GELU, SwiGLU, the residual, and a linear layer's bias and its gradient.
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/column_sum.cuh"
#include "axonn/kernels/cuda/launch.cuh"

#include <type_traits>

namespace axonn::cuda {
namespace {

constexpr float gelu_scale = 0.7978845608028654f;  // sqrt(2/π)
constexpr float gelu_cubic = 0.044715f;

// splitmix64's finaliser: a well-mixed 64-bit value per index
__device__ std::uint64_t mix(std::uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
__global__ void fill_uniform_kernel(float* out, std::int64_t n, std::uint64_t seed) {
    AXONN_GRID_STRIDE(i, n) {
        std::uint64_t const bits = mix(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(i));
        out[i] = static_cast<float>(static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);
    }
}

__global__ void to_bf16_kernel(__nv_bfloat16* out, float const* in, std::int64_t n) {
    AXONN_GRID_STRIDE(i, n) out[i] = __float2bfloat16_rn(in[i]);
}
__global__ void to_f32_kernel(float* out, __nv_bfloat16 const* in, std::int64_t n) {
    AXONN_GRID_STRIDE(i, n) out[i] = __bfloat162float(in[i]);
}

// kept: pre itself (the sum written in place where the bias changes it) or its bf16 rounding (always written).
template <typename Out, typename Kept>
__global__ void bias_gelu_forward_kernel(Out* out, Kept* kept, float const* pre, float const* bias, std::int64_t N,
                                         int F) {
    AXONN_GRID_STRIDE(i, N * F) {
        float u = pre[i];
        if (bias != nullptr) u += bias[i % F];
        if (bias != nullptr || !std::is_same<Kept, float>::value) store(kept, i, u);
        store(out, i, 0.5f * u * (1.0f + tanhf(gelu_scale * (u + gelu_cubic * u * u * u))));
    }
}
__device__ float gelu_derivative(float u) {
    float const tanh_inner = tanhf(gelu_scale * (u + gelu_cubic * u * u * u));
    float const sech2 = 1.0f - tanh_inner * tanh_inner;
    float const dinner = gelu_scale * (1.0f + 3.0f * gelu_cubic * u * u);
    return 0.5f * (1.0f + tanh_inner) + 0.5f * u * sech2 * dinner;
}
template <typename Out, typename In>
__global__ void gelu_backward_kernel(Out* dpre, In const* pre, float const* dout, std::int64_t n) {
    AXONN_GRID_STRIDE(i, n) store(dpre, i, gelu_derivative(load(pre, i)) * dout[i]);
}
// GELU's input gradient, written as the bias gradient's column sums read it: each (n, f) once; the sums add the
// unrounded values.
template <typename Out, typename In> struct GeluBiasGradientTerms {
    Out* dpre;
    In const* pre;
    float const* dout;
    int F;
    __device__ void operator()(std::int64_t n, int f, float* terms) const {
        std::int64_t const i = n * F + f;
        float const g = gelu_derivative(load(pre, i)) * dout[i];
        store(dpre, i, g);
        terms[0] = g;
    }
};

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// inp[N,2F] = [gate | up] per row
template <typename Out>
__global__ void swiglu_forward_kernel(Out* out, float const* inp, std::int64_t N, int F) {
    AXONN_GRID_STRIDE(i, N * F) {
        std::int64_t const row = i / F, f = i % F;
        float const gate = inp[row * 2 * F + f], up = inp[row * 2 * F + F + f];
        store(out, i, gate * sigmoid(gate) * up);
    }
}
template <typename In>
__global__ void swiglu_backward_kernel(float* dinp, In const* inp, float const* dout, std::int64_t N, int F) {
    AXONN_GRID_STRIDE(i, N * F) {
        std::int64_t const row = i / F, f = i % F;
        float const gate = load(inp, row * 2 * F + f), up = load(inp, row * 2 * F + F + f);
        float const s = sigmoid(gate), silu = gate * s;
        dinp[row * 2 * F + f] = dout[i] * up * (s + silu * (1.0f - s));
        dinp[row * 2 * F + F + f] = dout[i] * silu;
    }
}

__global__ void residual_forward_kernel(float* out, float const* a, float const* b, std::int64_t n) {
    AXONN_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

// Element i of the blocked layout [parts, rows, block] and its place in the row-major [rows, parts·block].
__global__ void move_column_blocks_kernel(float* out, float const* in, std::int64_t rows, int parts, int block,
                                          bool split) {
    AXONN_GRID_STRIDE(i, rows * parts * block) {
        std::int64_t const p = i / (rows * block), r = i / block % rows, c = i % block;
        std::int64_t const whole = (r * parts + p) * block + c;
        if (split) {
            out[i] = in[whole];
        } else {
            out[whole] = in[i];
        }
    }
}

__global__ void add_bias_kernel(float* out, float const* bias, std::int64_t M, std::int64_t N) {
    AXONN_GRID_STRIDE(i, M * N) out[i] += bias[i % N];
}
// The bias gradient's terms: dout[m, n] for output channel n.
struct BiasGradientTerms {
    float const* dout;
    std::int64_t N;
    __device__ void operator()(std::int64_t m, int n, float* terms) const { terms[0] = dout[m * N + n]; }
};

}  // namespace

void fill_uniform(float* out, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
    fill_uniform_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(out, n, seed);
    check_launch("fill_uniform");
}
void to_bf16(__nv_bfloat16* out, float const* in, std::int64_t n, cudaStream_t stream) {
    to_bf16_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(out, in, n);
    check_launch("to_bf16");
}
void to_f32(float* out, __nv_bfloat16 const* in, std::int64_t n, cudaStream_t stream) {
    to_f32_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(out, in, n);
    check_launch("to_f32");
}
template <typename Out, typename Kept>
void bias_gelu_forward(Out* out, Kept* kept_pre, float const* pre, float const* bias, std::int64_t N, int F,
                       cudaStream_t stream) {
    bias_gelu_forward_kernel<<<blocks_for(N * F), threads_per_block, 0, stream>>>(out, kept_pre, pre, bias, N, F);
    check_launch("bias_gelu_forward");
}
template void bias_gelu_forward(float*, float*, float const*, float const*, std::int64_t, int, cudaStream_t);
template void bias_gelu_forward(__nv_bfloat16*, float*, float const*, float const*, std::int64_t, int, cudaStream_t);
template void bias_gelu_forward(float*, __nv_bfloat16*, float const*, float const*, std::int64_t, int, cudaStream_t);
template void bias_gelu_forward(__nv_bfloat16*, __nv_bfloat16*, float const*, float const*, std::int64_t, int,
                                cudaStream_t);
template <typename Out, typename In>
void gelu_bias_backward(Out* dpre, float* dbias, In const* pre, float const* dout, std::int64_t N, int F,
                        cudaStream_t stream) {
    if (dbias != nullptr) {
        add_column_sums<1>(dbias, nullptr, N, F, GeluBiasGradientTerms<Out, In>{dpre, pre, dout, F},
                           "gelu_bias_backward", stream);
        return;
    }
    gelu_backward_kernel<<<blocks_for(N * F), threads_per_block, 0, stream>>>(dpre, pre, dout, N * F);
    check_launch("gelu_bias_backward");
}
template void gelu_bias_backward(float*, float*, float const*, float const*, std::int64_t, int, cudaStream_t);
template void gelu_bias_backward(float*, float*, __nv_bfloat16 const*, float const*, std::int64_t, int, cudaStream_t);
template void gelu_bias_backward(__nv_bfloat16*, float*, float const*, float const*, std::int64_t, int, cudaStream_t);
template void gelu_bias_backward(__nv_bfloat16*, float*, __nv_bfloat16 const*, float const*, std::int64_t, int,
                                 cudaStream_t);
template <typename Out> void swiglu_forward(Out* out, float const* inp, std::int64_t N, int F, cudaStream_t stream) {
    swiglu_forward_kernel<<<blocks_for(N * F), threads_per_block, 0, stream>>>(out, inp, N, F);
    check_launch("swiglu_forward");
}
template void swiglu_forward(float*, float const*, std::int64_t, int, cudaStream_t);
template void swiglu_forward(__nv_bfloat16*, float const*, std::int64_t, int, cudaStream_t);
template <typename In>
void swiglu_backward(float* dinp, In const* inp, float const* dout, std::int64_t N, int F, cudaStream_t stream) {
    swiglu_backward_kernel<<<blocks_for(N * F), threads_per_block, 0, stream>>>(dinp, inp, dout, N, F);
    check_launch("swiglu_backward");
}
template void swiglu_backward(float*, float const*, float const*, std::int64_t, int, cudaStream_t);
template void swiglu_backward(float*, __nv_bfloat16 const*, float const*, std::int64_t, int, cudaStream_t);
void residual_forward(float* out, float const* a, float const* b, std::int64_t n, cudaStream_t stream) {
    residual_forward_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(out, a, b, n);
    check_launch("residual_forward");
}
void move_column_blocks(float* out, float const* in, std::int64_t rows, int parts, int block, bool split,
                        cudaStream_t stream) {
    std::int64_t const n = rows * parts * block;
    if (n == 0) return;
    move_column_blocks_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(out, in, rows, parts, block, split);
    check_launch("move_column_blocks");
}
void add_bias(float* out, float const* bias, std::int64_t M, std::int64_t N, cudaStream_t stream) {
    if (bias == nullptr) return;
    add_bias_kernel<<<blocks_for(M * N), threads_per_block, 0, stream>>>(out, bias, M, N);
    check_launch("add_bias");
}
void accumulate_bias_gradient(float* dbias, float const* dout, std::int64_t M, std::int64_t N, cudaStream_t stream) {
    if (dbias == nullptr) return;
    add_column_sums<1>(dbias, nullptr, M, static_cast<int>(N), BiasGradientTerms{dout, N}, "accumulate_bias_gradient",
                       stream);
}

}  // namespace axonn::cuda
