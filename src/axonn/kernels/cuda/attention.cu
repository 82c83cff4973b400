// Fused causal attention on the GPU (the layout of kernels/cpu/attention.h): one warp per query row walks its
// visible keys with an online softmax, so only one log-sum-exp per row is kept; the backward recomputes each
// probability, a warp per query row for dq and a warp per key row for dk and dv (summing a key/value head's query
// heads), so that no two warps write the same gradient and nothing needs atomics.
//
// Each lane holds channels lane, lane + 32, ... of a head (up to 256 channels). This is the plain form, in fp32:
// the backend's fp32 attention, and its bf16 attention for heads the tensor-core kernels do not take
// (attention_tensor_cores.cu).
#include "axonn/core/error.h"
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

namespace axonn::cuda {
namespace {

constexpr int max_head_size = 256;
constexpr int per_lane = max_head_size / warp_size;
constexpr int warps_per_block = threads_per_block / warp_size;

// Where one head's rows are: the row stride of qkv (W) and the column of its query, key and value parts.
struct HeadLayout {
    int T, C, NH, NKV, hs;
    std::int64_t W;
    float scale;

    __device__ std::int64_t qkv_row(int b, int t) const { return (static_cast<std::int64_t>(b) * T + t) * W; }
    __device__ int q_column(int h) const { return h * hs; }
    __device__ int k_column(int g) const { return C + g * hs; }
    __device__ int v_column(int g) const { return C + (NKV + g) * hs; }
    __device__ std::int64_t out_row(int b, int t) const { return (static_cast<std::int64_t>(b) * T + t) * C; }
    __device__ std::int64_t lse_index(int b, int h, int t) const { return (static_cast<std::int64_t>(b) * NH + h) * T + t; }
    __device__ int group_of(int h) const { return h / (NH / NKV); }
};

HeadLayout head_layout(int T, int C, int NH, int NKV) {
    int const hs = C / NH;
    AXONN_REQUIRE(hs <= max_head_size, "the CUDA attention kernel takes heads of up to {} channels, not {}",
                  max_head_size, hs);
    return {T, C, NH, NKV, hs, C + 2 * static_cast<std::int64_t>(NKV) * hs, 1.0f / sqrtf(static_cast<float>(hs))};
}

// A head's row in registers: channel lane + 32·r in slot r (0 beyond hs).
struct LaneRow {
    float x[per_lane];
};

__device__ LaneRow load_row(float const* row, int hs, float factor = 1.0f) {
    LaneRow r;
    int const lane = threadIdx.x % warp_size;
#pragma unroll
    for (int s = 0; s < per_lane; ++s) {
        int const c = lane + s * warp_size;
        r.x[s] = c < hs ? row[c] * factor : 0.0f;
    }
    return r;
}

__device__ float dot(LaneRow const& a, float const* row, int hs) {
    int const lane = threadIdx.x % warp_size;
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < per_lane; ++s) {
        int const c = lane + s * warp_size;
        if (c < hs) sum += a.x[s] * row[c];
    }
    return warp_sum(sum);
}

// acc = acc · keep + weight · row
__device__ void scale_add(LaneRow& acc, float keep, float weight, float const* row, int hs) {
    int const lane = threadIdx.x % warp_size;
#pragma unroll
    for (int s = 0; s < per_lane; ++s) {
        int const c = lane + s * warp_size;
        if (c < hs) acc.x[s] = acc.x[s] * keep + weight * row[c];
    }
}

// row[c] = factor · a[c]
__device__ void store_row(float* row, LaneRow const& a, int hs, float factor) {
    int const lane = threadIdx.x % warp_size;
#pragma unroll
    for (int s = 0; s < per_lane; ++s) {
        int const c = lane + s * warp_size;
        if (c < hs) row[c] = factor * a.x[s];
    }
}

// The softmax of one query over keys 0 ... visible−1 of key/value rows k_rows and v_rows (row stride `stride`),
// online: returns the output row (normalised) and sets lse.
__device__ LaneRow attend(LaneRow const& q_scaled, float const* k_rows, float const* v_rows, std::int64_t stride,
                          int visible, int hs, float& lse) {
    LaneRow acc{};
    float running_max = -INFINITY, running_sum = 0.0f;
    for (int j = 0; j < visible; ++j) {
        float const score = dot(q_scaled, k_rows + j * stride, hs);
        float const new_max = fmaxf(running_max, score);
        float const keep = expf(running_max - new_max);  // 0 at the first key
        float const weight = expf(score - new_max);
        running_sum = running_sum * keep + weight;
        scale_add(acc, keep, weight, v_rows + j * stride, hs);
        running_max = new_max;
    }
    float const inverse = 1.0f / running_sum;
#pragma unroll
    for (int s = 0; s < per_lane; ++s) acc.x[s] *= inverse;
    lse = running_max + logf(running_sum);
    return acc;
}

// grid (ceil(T / warps), NH, B): a warp per query row
__global__ void attention_forward_kernel(float* out, float* lse, float const* qkv, HeadLayout L) {
    int const i = blockIdx.x * warps_per_block + threadIdx.x / warp_size;
    int const h = blockIdx.y, b = blockIdx.z;
    if (i >= L.T) return;
    int const g = L.group_of(h);
    LaneRow const q = load_row(qkv + L.qkv_row(b, i) + L.q_column(h), L.hs, L.scale);
    float row_lse;
    LaneRow const o = attend(q, qkv + L.qkv_row(b, 0) + L.k_column(g), qkv + L.qkv_row(b, 0) + L.v_column(g), L.W,
                             i + 1, L.hs, row_lse);
    store_row(out + L.out_row(b, i) + h * L.hs, o, L.hs, 1.0f);
    if (threadIdx.x % warp_size == 0) lse[L.lse_index(b, h, i)] = row_lse;
}

// D[b,h,i] = dO_i · O_i, the softmax backward's row term
__global__ void attention_row_dot_kernel(float* D, float const* dout, float const* out, HeadLayout L) {
    int const i = blockIdx.x * warps_per_block + threadIdx.x / warp_size;
    int const h = blockIdx.y, b = blockIdx.z;
    if (i >= L.T) return;
    float const* o = out + L.out_row(b, i) + h * L.hs;
    LaneRow const d_o = load_row(dout + L.out_row(b, i) + h * L.hs, L.hs);
    float const value = dot(d_o, o, L.hs);
    if (threadIdx.x % warp_size == 0) D[L.lse_index(b, h, i)] = value;
}

// dq_i = scale · Σ_{j ≤ i} P_ij (dO_i·v_j − D_i) k_j      grid (ceil(T / warps), NH, B)
__global__ void attention_dq_kernel(float* dqkv, float const* dout, float const* qkv, float const* lse,
                                    float const* D, HeadLayout L) {
    int const i = blockIdx.x * warps_per_block + threadIdx.x / warp_size;
    int const h = blockIdx.y, b = blockIdx.z;
    if (i >= L.T) return;
    int const g = L.group_of(h);
    LaneRow const q = load_row(qkv + L.qkv_row(b, i) + L.q_column(h), L.hs, L.scale);
    LaneRow const d_o = load_row(dout + L.out_row(b, i) + h * L.hs, L.hs);
    float const row_lse = lse[L.lse_index(b, h, i)], row_d = D[L.lse_index(b, h, i)];
    LaneRow dq{};
    for (int j = 0; j <= i; ++j) {
        float const* k = qkv + L.qkv_row(b, j) + L.k_column(g);
        float const* v = qkv + L.qkv_row(b, j) + L.v_column(g);
        float const p = expf(dot(q, k, L.hs) - row_lse);
        float const ds = p * (dot(d_o, v, L.hs) - row_d);
        scale_add(dq, 1.0f, ds, k, L.hs);
    }
    store_row(dqkv + L.qkv_row(b, i) + L.q_column(h), dq, L.hs, L.scale);
}

// For key j of key/value head g, over its query heads and the queries i ≥ j:
// dv_j = Σ P_ij dO_i;  dk_j = scale · Σ P_ij (dO_i·v_j − D_i) q_i      grid (ceil(T / warps), NKV, B)
__global__ void attention_dkv_kernel(float* dqkv, float const* dout, float const* qkv, float const* lse,
                                     float const* D, HeadLayout L) {
    int const j = blockIdx.x * warps_per_block + threadIdx.x / warp_size;
    int const g = blockIdx.y, b = blockIdx.z;
    if (j >= L.T) return;
    LaneRow const k = load_row(qkv + L.qkv_row(b, j) + L.k_column(g), L.hs, L.scale);
    LaneRow const v = load_row(qkv + L.qkv_row(b, j) + L.v_column(g), L.hs);
    LaneRow dk{}, dv{};
    int const group = L.NH / L.NKV;
    for (int h = g * group; h < (g + 1) * group; ++h) {
        for (int i = j; i < L.T; ++i) {
            float const* q = qkv + L.qkv_row(b, i) + L.q_column(h);
            float const* d_o = dout + L.out_row(b, i) + h * L.hs;
            float const p = expf(dot(k, q, L.hs) - lse[L.lse_index(b, h, i)]);
            float const ds = p * (dot(v, d_o, L.hs) - D[L.lse_index(b, h, i)]);
            scale_add(dv, 1.0f, p, d_o, L.hs);
            scale_add(dk, 1.0f, ds, q, L.hs);
        }
    }
    store_row(dqkv + L.qkv_row(b, j) + L.k_column(g), dk, L.hs, L.scale);
    store_row(dqkv + L.qkv_row(b, j) + L.v_column(g), dv, L.hs, 1.0f);
}

// k_cache, v_cache[B,NKV,capacity,hs]: token i of row b goes to position past + i      one thread per channel
__global__ void kv_cache_append_kernel(float* k_cache, float* v_cache, float const* qkv, int n, int past,
                                       int capacity, HeadLayout L, std::int64_t total) {
    AXONN_GRID_STRIDE(e, total) {  // e = ((b·NKV + g)·n + i)·hs + c
        int const c = static_cast<int>(e % L.hs);
        std::int64_t rest = e / L.hs;
        int const i = static_cast<int>(rest % n);
        rest /= n;
        int const g = static_cast<int>(rest % L.NKV);
        int const b = static_cast<int>(rest / L.NKV);
        float const* row = qkv + (static_cast<std::int64_t>(b) * n + i) * L.W;
        std::int64_t const position = ((static_cast<std::int64_t>(b) * L.NKV + g) * capacity + past + i) * L.hs + c;
        k_cache[position] = row[L.k_column(g) + c];
        v_cache[position] = row[L.v_column(g) + c];
    }
}

// A warp per new token and query head, over the cached positions 0 ... past + i      grid (ceil(n / warps), NH, B)
__global__ void attention_over_cache_kernel(float* out, float const* qkv, float const* k_cache, float const* v_cache,
                                            int n, int past, int capacity, HeadLayout L) {
    int const i = blockIdx.x * warps_per_block + threadIdx.x / warp_size;
    int const h = blockIdx.y, b = blockIdx.z;
    if (i >= n) return;
    int const g = L.group_of(h);
    LaneRow const q = load_row(qkv + (static_cast<std::int64_t>(b) * n + i) * L.W + L.q_column(h), L.hs, L.scale);
    std::int64_t const head = (static_cast<std::int64_t>(b) * L.NKV + g) * capacity * L.hs;
    float unused_lse;
    LaneRow const o = attend(q, k_cache + head, v_cache + head, L.hs, past + i + 1, L.hs, unused_lse);
    store_row(out + (static_cast<std::int64_t>(b) * n + i) * L.C + h * L.hs, o, L.hs, 1.0f);
}

dim3 row_grid(int rows, int heads, int B) {
    return dim3(static_cast<unsigned>((rows + warps_per_block - 1) / warps_per_block), static_cast<unsigned>(heads),
                static_cast<unsigned>(B));
}

}  // namespace

void attention_forward(float* out, float* lse, float const* qkv, int B, int T, int C, int NH, int NKV,
                       cudaStream_t stream) {
    if (B == 0 || T == 0) return;
    HeadLayout const L = head_layout(T, C, NH, NKV);
    attention_forward_kernel<<<row_grid(T, NH, B), threads_per_block, 0, stream>>>(out, lse, qkv, L);
    check_launch("attention_forward");
}

void attention_row_dots(float* row_dot, float const* dout, float const* out, int B, int T, int C, int NH, int NKV,
                        cudaStream_t stream) {
    if (B == 0 || T == 0) return;
    HeadLayout const L = head_layout(T, C, NH, NKV);
    attention_row_dot_kernel<<<row_grid(T, NH, B), threads_per_block, 0, stream>>>(row_dot, dout, out, L);
    check_launch("attention_backward (row sums)");
}

void attention_backward(float* dqkv, float const* dout, float const* qkv, float const* out, float const* lse,
                        float* row_dot, int B, int T, int C, int NH, int NKV, cudaStream_t stream) {
    if (B == 0 || T == 0) return;
    HeadLayout const L = head_layout(T, C, NH, NKV);
    attention_row_dots(row_dot, dout, out, B, T, C, NH, NKV, stream);
    attention_dq_kernel<<<row_grid(T, NH, B), threads_per_block, 0, stream>>>(dqkv, dout, qkv, lse, row_dot, L);
    check_launch("attention_backward (queries)");
    attention_dkv_kernel<<<row_grid(T, NKV, B), threads_per_block, 0, stream>>>(dqkv, dout, qkv, lse, row_dot, L);
    check_launch("attention_backward (keys and values)");
}

void kv_cache_append(float* k_cache, float* v_cache, float const* qkv, int B, int n, int past, int capacity, int C,
                     int NH, int NKV, cudaStream_t stream) {
    HeadLayout const L = head_layout(n, C, NH, NKV);
    std::int64_t const total = static_cast<std::int64_t>(B) * NKV * n * L.hs;
    if (total == 0) return;
    kv_cache_append_kernel<<<blocks_for(total), threads_per_block, 0, stream>>>(k_cache, v_cache, qkv, n, past,
                                                                               capacity, L, total);
    check_launch("kv_cache_append");
}

void attention_over_cache(float* out, float const* qkv, float const* k_cache, float const* v_cache, int B, int n,
                          int past, int capacity, int C, int NH, int NKV, cudaStream_t stream) {
    if (B == 0 || n == 0) return;
    HeadLayout const L = head_layout(n, C, NH, NKV);
    attention_over_cache_kernel<<<row_grid(n, NH, B), threads_per_block, 0, stream>>>(out, qkv, k_cache, v_cache, n,
                                                                                     past, capacity, L);
    check_launch("attention_over_cache");
}

}  // namespace axonn::cuda
