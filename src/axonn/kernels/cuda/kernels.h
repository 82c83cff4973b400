// The CUDA kernels behind CudaBackend, one launcher per operation, each on the stream it is given. Every pointer
// is GPU memory, except inv_freq (a few constants, host memory). Shapes and semantics are those of the Backend
// operation of the same name (kernels/backend.h); what differs on the GPU is said here.
//
// Sums over rows (a bias's, a norm weight's or an embedding row's gradient) are never taken by atomics, so that a
// step gives the same bits on every run: chunks of rows, then the chunks in order (column_sum.cuh), or, for the
// embedding rows that tokens scatter into, one thread per channel walking the tokens in order.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace axonn::cuda {

// out[n] uniform in [−1, 1), a hash of (seed, n): test and benchmark operands made on the GPU
void fill_uniform(float* out, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

// out[n] = bf16(in[n]) (to nearest, ties to even), and back
void to_bf16(__nv_bfloat16* out, float const* in, std::int64_t n, cudaStream_t stream);
void to_f32(float* out, __nv_bfloat16 const* in, std::int64_t n, cudaStream_t stream);

// out[B,T,C] = wte[tokens − vocab_begin] + wpe[t]      wte[vocab_rows,C] fp32 or bf16, wpe[maxT,C] or null
void encoder_forward(float* out, std::int32_t const* tokens, float const* wte, float const* wpe, int B, int T, int C,
                     int vocab_begin, int vocab_rows, cudaStream_t stream);
void encoder_forward(float* out, std::int32_t const* tokens, __nv_bfloat16 const* wte, float const* wpe, int B,
                     int T, int C, int vocab_begin, int vocab_rows, cudaStream_t stream);
void encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B, int T, int C,
                      int vocab_begin, int vocab_rows, cudaStream_t stream);

// LayerNorm and RMSNorm in phases around an all-reduce of their per-row statistics (doubles).
void layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C, cudaStream_t stream);
// sum[N,C] = a + b and its rows' LayerNorm ([N,2]) or RMSNorm ([N]) statistics, in one pass
void residual_norm_statistics(float* sum, float const* a, float const* b, double* stats, std::int64_t N, int C,
                              bool layernorm, cudaStream_t stream);
// out fp32 or bf16 (Out: float or __nv_bfloat16) in the forwards below
template <typename Out>
void layernorm_forward(Out* out, float* mean, float* rstd, float const* inp, float const* weight, float const* bias,
                       double const* stats, std::int64_t N, int C, int C_total, cudaStream_t stream);
void layernorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                   float const* mean, float const* rstd, std::int64_t N, int C, cudaStream_t stream);
void layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                        float const* weight, float const* mean, float const* rstd, double const* stats,
                        std::int64_t N, int C, int C_total, cudaStream_t stream);
void rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C, cudaStream_t stream);
template <typename Out>
void rmsnorm_forward(Out* out, float* rstd, float const* inp, float const* weight, double const* stats,
                     std::int64_t N, int C, int C_total, double eps, cudaStream_t stream);
void rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                 float const* rstd, std::int64_t N, int C, cudaStream_t stream);
void rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp, float const* weight,
                      float const* rstd, double const* stats, std::int64_t N, int C, int C_total,
                      cudaStream_t stream);

// out[M,N] += bias[N];  dbias[N] += Σ_m dout[m,:]
void add_bias(float* out, float const* bias, std::int64_t M, std::int64_t N, cudaStream_t stream);
void accumulate_bias_gradient(float* dbias, float const* dout, std::int64_t M, std::int64_t N, cudaStream_t stream);

// Element-wise operations.
// kept_pre[N,F] = pre + bias[F] (bias may be null): pre itself (Kept float, written in place where the bias changes
// it) or its bf16 rounding alone (always written); out = gelu(pre + bias), one pass; dpre = gelu'(pre) · dout
// (written, fp32 or bf16: Out) with dbias[F] += Σ_n dpre (may be null) summed as the same pass computes it
// (column_sum.cuh), pre fp32 or its bf16 rounding (In).
template <typename Out, typename Kept>
void bias_gelu_forward(Out* out, Kept* kept_pre, float const* pre, float const* bias, std::int64_t N, int F,
                       cudaStream_t stream);
template <typename Out, typename In>
void gelu_bias_backward(Out* dpre, float* dbias, In const* pre, float const* dout, std::int64_t N, int F,
                        cudaStream_t stream);
template <typename Out> void swiglu_forward(Out* out, float const* inp, std::int64_t N, int F, cudaStream_t stream);
// inp[N,2F] fp32 or its bf16 rounding (In)
template <typename In>
void swiglu_backward(float* dinp, In const* inp, float const* dout, std::int64_t N, int F, cudaStream_t stream);
void residual_forward(float* out, float const* a, float const* b, std::int64_t n, cudaStream_t stream);
// A matrix's column blocks one after another (split: out[parts, rows, block] = in[rows, parts·block]), or back.
void move_column_blocks(float* out, float const* in, std::int64_t rows, int parts, int block, bool split,
                        cudaStream_t stream);

// Rotary embeddings in place; inv_freq_device[head_size/2] (a copy on the GPU of the model's frequencies).
void rope_rotate(float* x, double const* inv_freq_device, int B, int T, int heads, int head_size,
                 std::int64_t stride, int first_position, int direction, cudaStream_t stream);

// Fused causal attention: one warp per query row (forward, dq) or key row (dk, dv) walks the keys (queries) with
// an online softmax, recomputing each probability in the backward; nothing T×T is stored.
// Computes in fp32. lse[B,NH,T]; the backward's row_dot[B,NH,T] is scratch.
void attention_forward(float* out, float* lse, float const* qkv, int B, int T, int C, int NH, int NKV,
                       cudaStream_t stream);
void attention_backward(float* dqkv, float const* dout, float const* qkv, float const* out, float const* lse,
                        float* row_dot, int B, int T, int C, int NH, int NKV, cudaStream_t stream);
// row_dot[B,NH,T] = each query row's dO · O, the softmax backward's row term (both attention backwards use it)
void attention_row_dots(float* row_dot, float const* dout, float const* out, int B, int T, int C, int NH, int NKV,
                        cudaStream_t stream);
// The same attention on the tensor cores, for bf16 GEMMs and heads of 64 or 128 channels (attention_tensor_cores.cu):
// q, k, v, dO and the probabilities rounded to bf16 as the CPU's bf16 attention rounds them, fp32 accumulation.
bool tensor_core_attention_fits(int head_size);
void attention_forward_tensor_cores(float* out, float* lse, float const* qkv, int B, int T, int C, int NH, int NKV,
                                    cudaStream_t stream);
void attention_backward_tensor_cores(float* dqkv, float const* dout, float const* qkv, float const* out,
                                     float const* lse, float* row_dot, int B, int T, int C, int NH, int NKV,
                                     cudaStream_t stream);
// Generation: append n new tokens' keys and values to the cache, then attend over positions 0 ... past+i.
void kv_cache_append(float* k_cache, float* v_cache, float const* qkv, int B, int n, int past, int capacity, int C,
                     int NH, int NKV, cudaStream_t stream);
void attention_over_cache(float* out, float const* qkv, float const* k_cache, float const* v_cache, int B, int n,
                          int past, int capacity, int C, int NH, int NKV, cudaStream_t stream);

// Vocabulary-parallel softmax cross-entropy in phases (kernels/cpu/cross_entropy.h).
void cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local,
                       cudaStream_t stream);
void cross_entropy_sums(double* sums, float const* logits, float const* row_max, std::int32_t const* targets,
                        std::int64_t N, int valid, int Vp_local, int vocab_begin, cudaStream_t stream);
void cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                          std::int32_t const* targets, std::int64_t N, cudaStream_t stream);
// dlogits fp32 (may be logits) or bf16 (Out: float or __nv_bfloat16), rounded as to_bf16 rounds
template <typename Out>
void cross_entropy_backward(Out* dlogits, float const* logits, float const* logsumexp, std::int32_t const* targets,
                            float const* dlosses, std::int64_t N, int valid, int Vp_local, int vocab_begin,
                            cudaStream_t stream);
// All four at once where this process holds the whole vocabulary (ids 0 ...): one block per row
template <typename Out>
void cross_entropy_forward_backward(float* losses, float* logsumexp, Out* dlogits, float const* logits,
                                    std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                                    int Vp_local, cudaStream_t stream);

// AdamW over a flat range (the constants as kernels/types.h's AdamWStep), refreshing param_bf16 when not null.
// (The .cu files are C++17 and do not see kernels/types.h: the factors come from its adamw_factors.)
struct AdamWConstants {
    float beta1, beta2, eps, grad_scale;
    float decay_factor, step_size, inverse_sqrt_bc2;
};
void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWConstants const& step,
                  __nv_bfloat16* param_bf16, cudaStream_t stream);
// partials[sum_of_squares_blocks] ← Σ x², in a fixed order; the caller adds the partials.
inline constexpr int sum_of_squares_blocks = 256;
void sum_of_squares_partials(double* partials, float const* x, std::int64_t n, cudaStream_t stream);

}  // namespace axonn::cuda
