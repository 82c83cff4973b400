// Fused causal attention on the tensor cores, for bf16 GEMMs and heads of 64 or 128 channels (FlashAttention-2's
// schedule, through WMMA's 16×16×16 bf16 products with fp32 accumulation). The layout is kernels/cpu/attention.h's.
//
// Forward: a block takes 64 query rows of one head, a warp 16 of them; it walks the key tiles of 64 up to the
// diagonal, each tile's scores S = Q·Kᵀ and the product P·V on the tensor cores, the online softmax (scale, causal
// mask, running maximum and sum) by the warp's lanes, two to a row. The output rows are kept in shared memory
// (WMMA's accumulator layout is opaque, so a row cannot be rescaled in registers), with one log-sum-exp per row.
// Backward: one kernel per query tile for dQ = Σ dS·K, one per key tile for dK = Σ dSᵀ·Q and dV = Σ Pᵀ·dO (over
// the key/value head's query heads), each recomputing P = exp(scale·S − lse) tile by tile, so that every gradient
// element has one writer. Operands are rounded to bf16 as each tile is loaded; everything else stays fp32.
#include "axonn/core/error.h"
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

#include <mma.h>

namespace axonn::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;

constexpr int tile_rows = 64;  // query rows (keys, in the dK/dV kernel) per block
constexpr int tile_keys = 64;  // keys (queries) per step
constexpr int warps = 4;       // 16 rows each
constexpr int tile_threads = warps * warp_size;
constexpr int fragment = 16;
constexpr int score_ld = tile_keys + 4;  // fp32 rows, padded (WMMA wants a multiple of 4 floats)
constexpr int prob_ld = tile_keys + 8;   // bf16 rows, padded (a multiple of 8)

using FragmentA = wmma::fragment<wmma::matrix_a, fragment, fragment, fragment, bf16, wmma::row_major>;
using FragmentBRow = wmma::fragment<wmma::matrix_b, fragment, fragment, fragment, bf16, wmma::row_major>;
using FragmentBCol = wmma::fragment<wmma::matrix_b, fragment, fragment, fragment, bf16, wmma::col_major>;
using Accumulator = wmma::fragment<wmma::accumulator, fragment, fragment, fragment, float>;

struct Layout {
    int T, C, NH, NKV;
    std::int64_t W;  // a token's [q | k | v] width
    float scale;
    __device__ std::int64_t row(int b, int t) const { return (static_cast<std::int64_t>(b) * T + t) * W; }
    __device__ std::int64_t out_row(int b, int t) const { return (static_cast<std::int64_t>(b) * T + t) * C; }
    __device__ std::int64_t stat(int b, int h, int t) const { return (static_cast<std::int64_t>(b) * NH + h) * T + t; }
};

// rows [first, first + 64) of a head's D columns starting at `column` of a [B·T, ld] fp32 buffer, as bf16 into a
// [64, D + 8] shared tile; rows past T are zeros.
template <int D>
__device__ void load_tile(bf16* tile, float const* source, std::int64_t ld, int b, int T, int first, int column) {
    for (int e = threadIdx.x; e < tile_rows * D; e += tile_threads) {
        int const r = e / D, c = e % D, t = first + r;
        float const value = t < T ? source[(static_cast<std::int64_t>(b) * T + t) * ld + column + c] : 0.0f;
        tile[r * (D + 8) + c] = __float2bfloat16_rn(value);
    }
}

// scores[16, 64] (fp32, ld score_ld) = rows[16, D] · columnsᵀ, columns a [64, D] tile: both bf16, ld D + 8
template <int D>
__device__ void scores_of(float* scores, bf16 const* rows, bf16 const* columns) {
    for (int n = 0; n < tile_keys / fragment; ++n) {
        Accumulator accumulator;
        wmma::fill_fragment(accumulator, 0.0f);
        for (int k = 0; k < D / fragment; ++k) {
            FragmentA a;
            FragmentBCol b;
            wmma::load_matrix_sync(a, rows + k * fragment, D + 8);
            wmma::load_matrix_sync(b, columns + n * fragment * (D + 8) + k * fragment, D + 8);
            wmma::mma_sync(accumulator, a, b, accumulator);
        }
        wmma::store_matrix_sync(scores + n * fragment, accumulator, score_ld, wmma::mem_row_major);
    }
}

// accumulators[D/16] (+)= weights[16, 64] (bf16, ld prob_ld) · values[64, D] (bf16, ld D + 8)
template <int D>
__device__ void accumulate_product(Accumulator* accumulators, bf16 const* weights, bf16 const* values) {
    for (int n = 0; n < D / fragment; ++n) {
        for (int k = 0; k < tile_keys / fragment; ++k) {
            FragmentA a;
            FragmentBRow b;
            wmma::load_matrix_sync(a, weights + k * fragment, prob_ld);
            wmma::load_matrix_sync(b, values + k * fragment * (D + 8) + n * fragment, D + 8);
            wmma::mma_sync(accumulators[n], a, b, accumulators[n]);
        }
    }
}

// destination[c] = factor · the warp's 16 × D accumulators' row of this lane (half its columns), through the
// warp's `result` rows in shared memory; only where `real` (a row before T).
template <int D>
__device__ void store_rows(float* destination, Accumulator const (&accumulators)[D / fragment], float* result,
                         float factor, bool real) {
    int const lane = threadIdx.x % warp_size, r = lane / 2, half = lane % 2;
#pragma unroll
    for (int n = 0; n < D / fragment; ++n) {
        wmma::store_matrix_sync(result + n * fragment, accumulators[n], D + 4, wmma::mem_row_major);
    }
    __syncwarp();
    if (real) {
        for (int c = half * D / 2; c < (half + 1) * D / 2; ++c) destination[c] = factor * result[r * (D + 4) + c];
    }
    __syncwarp();
}

template <int D> struct ForwardShared {
    bf16 q[tile_rows * (D + 8)], k[tile_keys * (D + 8)], v[tile_keys * (D + 8)];
    float scores[warps][fragment * score_ld];
    bf16 probabilities[warps][fragment * prob_ld];
    float out[warps][fragment * (D + 4)];
    float product[warps][fragment * (D + 4)];
};

// grid (ceil(T / 64), NH, B), 128 threads
template <int D>
__global__ void __launch_bounds__(tile_threads) forward_kernel(float* out, float* lse, float const* qkv, Layout L) {
    extern __shared__ __align__(128) unsigned char shared_bytes[];
    auto& s = *reinterpret_cast<ForwardShared<D>*>(shared_bytes);
    int const q0 = blockIdx.x * tile_rows, h = blockIdx.y, b = blockIdx.z, g = h / (L.NH / L.NKV);
    int const warp = threadIdx.x / warp_size, lane = threadIdx.x % warp_size;
    int const r = lane / 2, half = lane % 2;  // this lane's row of the warp's 16, and half of its columns
    int const query = q0 + warp * fragment + r;
    float* scores = s.scores[warp];
    bf16* probabilities = s.probabilities[warp];
    float* out_rows = s.out[warp];
    float* product = s.product[warp];

    load_tile<D>(s.q, qkv, L.W, b, L.T, q0, h * D);
    for (int c = half * D / 2; c < (half + 1) * D / 2; ++c) out_rows[r * (D + 4) + c] = 0.0f;
    float running_max = -INFINITY, running_sum = 0.0f;
    for (int k0 = 0; k0 <= q0; k0 += tile_keys) {
        __syncthreads();  // the previous tile's keys and values are no longer read
        load_tile<D>(s.k, qkv, L.W, b, L.T, k0, L.C + g * D);
        load_tile<D>(s.v, qkv, L.W, b, L.T, k0, L.C + (L.NKV + g) * D);
        __syncthreads();
        scores_of<D>(scores, s.q + warp * fragment * (D + 8), s.k);
        __syncwarp();
        float tile_max = -INFINITY;
        for (int c = half * 32; c < half * 32 + 32; ++c) {
            int const key = k0 + c;
            float const score = key <= query && key < L.T ? scores[r * score_ld + c] * L.scale : -INFINITY;
            scores[r * score_ld + c] = score;
            tile_max = fmaxf(tile_max, score);
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        float const new_max = fmaxf(running_max, tile_max);  // finite: key k0 ≤ q0 ≤ query is always visible
        float const keep = expf(running_max - new_max);
        float tile_sum = 0.0f;
        for (int c = half * 32; c < half * 32 + 32; ++c) {
            float const p = expf(scores[r * score_ld + c] - new_max);
            probabilities[r * prob_ld + c] = __float2bfloat16_rn(p);
            tile_sum += p;
        }
        tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
        running_sum = running_sum * keep + tile_sum;
        running_max = new_max;
        __syncwarp();
        Accumulator accumulators[D / fragment];
        for (auto& accumulator : accumulators) wmma::fill_fragment(accumulator, 0.0f);
        accumulate_product<D>(accumulators, probabilities, s.v);
        for (int n = 0; n < D / fragment; ++n) {
            wmma::store_matrix_sync(product + n * fragment, accumulators[n], D + 4, wmma::mem_row_major);
        }
        __syncwarp();
        for (int c = half * D / 2; c < (half + 1) * D / 2; ++c) {
            out_rows[r * (D + 4) + c] = out_rows[r * (D + 4) + c] * keep + product[r * (D + 4) + c];
        }
        __syncwarp();
    }
    if (query >= L.T) return;
    float const inverse = 1.0f / running_sum;
    float* destination = out + L.out_row(b, query) + h * D;
    for (int c = half * D / 2; c < (half + 1) * D / 2; ++c) destination[c] = out_rows[r * (D + 4) + c] * inverse;
    if (half == 0) lse[L.stat(b, h, query)] = running_max + logf(running_sum);
}

template <int D> struct QueryGradientShared {
    bf16 q[tile_rows * (D + 8)], dout[tile_rows * (D + 8)], k[tile_keys * (D + 8)], v[tile_keys * (D + 8)];
    float scores[warps][fragment * score_ld];
    float dprobabilities[warps][fragment * score_ld];
    bf16 dscores[warps][fragment * prob_ld];
    float result[warps][fragment * (D + 4)];
};

// dq = scale · Σ_keys dS · K, dS = P ∘ (dO·Vᵀ − Dᵢ), P = exp(scale · Q·Kᵀ − lse)      grid (ceil(T / 64), NH, B)
template <int D>
__global__ void __launch_bounds__(tile_threads) query_gradient_kernel(float* dqkv, float const* dout,
                                                                      float const* qkv, float const* lse,
                                                                      float const* row_dot, Layout L) {
    extern __shared__ __align__(128) unsigned char shared_bytes[];
    auto& s = *reinterpret_cast<QueryGradientShared<D>*>(shared_bytes);
    int const q0 = blockIdx.x * tile_rows, h = blockIdx.y, b = blockIdx.z, g = h / (L.NH / L.NKV);
    int const warp = threadIdx.x / warp_size, lane = threadIdx.x % warp_size;
    int const r = lane / 2, half = lane % 2;
    int const query = q0 + warp * fragment + r;
    float const row_lse = query < L.T ? lse[L.stat(b, h, query)] : 0.0f;
    float const row_d = query < L.T ? row_dot[L.stat(b, h, query)] : 0.0f;

    load_tile<D>(s.q, qkv, L.W, b, L.T, q0, h * D);
    load_tile<D>(s.dout, dout, L.C, b, L.T, q0, h * D);
    Accumulator accumulators[D / fragment];
    for (auto& accumulator : accumulators) wmma::fill_fragment(accumulator, 0.0f);
    for (int k0 = 0; k0 <= q0; k0 += tile_keys) {
        __syncthreads();
        load_tile<D>(s.k, qkv, L.W, b, L.T, k0, L.C + g * D);
        load_tile<D>(s.v, qkv, L.W, b, L.T, k0, L.C + (L.NKV + g) * D);
        __syncthreads();
        scores_of<D>(s.scores[warp], s.q + warp * fragment * (D + 8), s.k);
        scores_of<D>(s.dprobabilities[warp], s.dout + warp * fragment * (D + 8), s.v);
        __syncwarp();
        for (int c = half * 32; c < half * 32 + 32; ++c) {
            int const key = k0 + c;
            bool const visible = key <= query && key < L.T && query < L.T;
            float const p = visible ? expf(s.scores[warp][r * score_ld + c] * L.scale - row_lse) : 0.0f;
            s.dscores[warp][r * prob_ld + c] = __float2bfloat16_rn(p * (s.dprobabilities[warp][r * score_ld + c] - row_d));
        }
        __syncwarp();
        accumulate_product<D>(accumulators, s.dscores[warp], s.k);
    }
    store_rows<D>(dqkv + L.row(b, query) + h * D, accumulators, s.result[warp], L.scale, query < L.T);
}

template <int D> struct KeyValueGradientShared {
    bf16 k[tile_rows * (D + 8)], v[tile_rows * (D + 8)], q[tile_keys * (D + 8)], dout[tile_keys * (D + 8)];
    float query_lse[tile_keys], query_dot[tile_keys];
    float scores[warps][fragment * score_ld];
    float dprobabilities[warps][fragment * score_ld];
    bf16 probabilities[warps][fragment * prob_ld];
    bf16 dscores[warps][fragment * prob_ld];
    float result[warps][fragment * (D + 4)];
};

// For 64 keys of key/value head g, over its query heads and the query tiles on or past the diagonal:
// dv = Σ Pᵀ · dO, dk = scale · Σ dSᵀ · Q      grid (ceil(T / 64), NKV, B)
template <int D>
__global__ void __launch_bounds__(tile_threads) key_value_gradient_kernel(float* dqkv, float const* dout,
                                                                          float const* qkv, float const* lse,
                                                                          float const* row_dot, Layout L) {
    extern __shared__ __align__(128) unsigned char shared_bytes[];
    auto& s = *reinterpret_cast<KeyValueGradientShared<D>*>(shared_bytes);
    int const k0 = blockIdx.x * tile_rows, g = blockIdx.y, b = blockIdx.z;
    int const warp = threadIdx.x / warp_size, lane = threadIdx.x % warp_size;
    int const r = lane / 2, half = lane % 2;
    int const key = k0 + warp * fragment + r;
    int const group = L.NH / L.NKV;

    load_tile<D>(s.k, qkv, L.W, b, L.T, k0, L.C + g * D);
    load_tile<D>(s.v, qkv, L.W, b, L.T, k0, L.C + (L.NKV + g) * D);
    Accumulator dk[D / fragment], dv[D / fragment];
    for (int n = 0; n < D / fragment; ++n) {
        wmma::fill_fragment(dk[n], 0.0f);
        wmma::fill_fragment(dv[n], 0.0f);
    }
    for (int h = g * group; h < (g + 1) * group; ++h) {
        for (int q0 = k0; q0 < L.T; q0 += tile_keys) {
            __syncthreads();
            load_tile<D>(s.q, qkv, L.W, b, L.T, q0, h * D);
            load_tile<D>(s.dout, dout, L.C, b, L.T, q0, h * D);
            for (int c = threadIdx.x; c < tile_keys; c += tile_threads) {
                bool const real = q0 + c < L.T;
                s.query_lse[c] = real ? lse[L.stat(b, h, q0 + c)] : 0.0f;
                s.query_dot[c] = real ? row_dot[L.stat(b, h, q0 + c)] : 0.0f;
            }
            __syncthreads();
            scores_of<D>(s.scores[warp], s.k + warp * fragment * (D + 8), s.q);             // (K·Qᵀ) = Sᵀ
            scores_of<D>(s.dprobabilities[warp], s.v + warp * fragment * (D + 8), s.dout);  // (V·dOᵀ) = dPᵀ
            __syncwarp();
            for (int c = half * 32; c < half * 32 + 32; ++c) {
                int const query = q0 + c;
                bool const visible = query >= key && query < L.T && key < L.T;
                float const p = visible ? expf(s.scores[warp][r * score_ld + c] * L.scale - s.query_lse[c]) : 0.0f;
                s.probabilities[warp][r * prob_ld + c] = __float2bfloat16_rn(p);
                s.dscores[warp][r * prob_ld + c] =
                    __float2bfloat16_rn(p * (s.dprobabilities[warp][r * score_ld + c] - s.query_dot[c]));
            }
            __syncwarp();
            accumulate_product<D>(dv, s.probabilities[warp], s.dout);
            accumulate_product<D>(dk, s.dscores[warp], s.q);
        }
    }
    float* result = s.result[warp];
    store_rows<D>(dqkv + L.row(b, key) + L.C + g * D, dk, result, L.scale, key < L.T);
    store_rows<D>(dqkv + L.row(b, key) + L.C + (L.NKV + g) * D, dv, result, 1.0f, key < L.T);
}

Layout layout_of(int T, int C, int NH, int NKV) {
    int const hs = C / NH;
    return {T, C, NH, NKV, C + 2 * static_cast<std::int64_t>(NKV) * hs, 1.0f / sqrtf(static_cast<float>(hs))};
}

dim3 tile_grid(int T, int heads, int B) {
    return dim3(static_cast<unsigned>((T + tile_rows - 1) / tile_rows), static_cast<unsigned>(heads),
                static_cast<unsigned>(B));
}

// Launches `kernel` with `bytes` of shared memory, raising its limit past the default 48 KB first.
template <typename Kernel, typename... Args>
void launch_tiled(Kernel kernel, std::size_t bytes, dim3 grid, cudaStream_t stream, char const* name, Args... args) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
          "raise a kernel's shared memory");
    kernel<<<grid, tile_threads, bytes, stream>>>(args...);
    check_launch(name);
}

template <int D>
void forward(float* out, float* lse, float const* qkv, int B, int T, int C, int NH, int NKV, cudaStream_t stream) {
    launch_tiled(forward_kernel<D>, sizeof(ForwardShared<D>), tile_grid(T, NH, B), stream,
                 "attention_forward (tensor cores)", out, lse, qkv, layout_of(T, C, NH, NKV));
}

template <int D>
void backward(float* dqkv, float const* dout, float const* qkv, float const* lse, float const* row_dot, int B, int T,
              int C, int NH, int NKV, cudaStream_t stream) {
    Layout const L = layout_of(T, C, NH, NKV);
    launch_tiled(query_gradient_kernel<D>, sizeof(QueryGradientShared<D>), tile_grid(T, NH, B), stream,
                 "attention_backward (tensor cores, queries)", dqkv, dout, qkv, lse, row_dot, L);
    launch_tiled(key_value_gradient_kernel<D>, sizeof(KeyValueGradientShared<D>), tile_grid(T, NKV, B), stream,
                 "attention_backward (tensor cores, keys and values)", dqkv, dout, qkv, lse, row_dot, L);
}

}  // namespace

bool tensor_core_attention_fits(int head_size) { return head_size == 64 || head_size == 128; }

void attention_forward_tensor_cores(float* out, float* lse, float const* qkv, int B, int T, int C, int NH, int NKV,
                                    cudaStream_t stream) {
    if (B == 0 || T == 0) return;
    int const hs = C / NH;
    AXONN_INVARIANT(tensor_core_attention_fits(hs), "tensor-core attention for heads of {} channels", hs);
    if (hs == 64) {
        forward<64>(out, lse, qkv, B, T, C, NH, NKV, stream);
    } else {
        forward<128>(out, lse, qkv, B, T, C, NH, NKV, stream);
    }
}

void attention_backward_tensor_cores(float* dqkv, float const* dout, float const* qkv, float const* out,
                                     float const* lse, float* row_dot, int B, int T, int C, int NH, int NKV,
                                     cudaStream_t stream) {
    if (B == 0 || T == 0) return;
    int const hs = C / NH;
    AXONN_INVARIANT(tensor_core_attention_fits(hs), "tensor-core attention for heads of {} channels", hs);
    attention_row_dots(row_dot, dout, out, B, T, C, NH, NKV, stream);
    if (hs == 64) {
        backward<64>(dqkv, dout, qkv, lse, row_dot, B, T, C, NH, NKV, stream);
    } else {
        backward<128>(dqkv, dout, qkv, lse, row_dot, B, T, C, NH, NKV, stream);
    }
}

}  // namespace axonn::cuda
