// The operations a model step needs, behind one interface, so that a CUDA backend can provide the same
// operations without touching the model code. Activations, gradients and optimizer state are fp32 buffers in the
// backend's memory (memory(): the host's for the CPU, the GPU's for CUDA), and every pointer an operation takes
// is in it, except rope_rotate's frequencies (host constants); a GEMM's weight operand is a WeightView, fp32 or
// bf16; every argument comment gives its shape. A device backend may queue operations and return before they
// finish: copy_to_host, sum_of_squares and synchronize wait. Letters: B batch, T time, C channels, NH heads, M/N/K GEMM sizes, V vocabulary, Vp padded vocabulary.
// Backward operations accumulate (+=) into gradient buffers, except where they say they write.
//
// Precision: a backend made for bf16 (make_backend) runs its Linear GEMMs and attention's tile GEMMs on bf16
// inputs with fp32 accumulation, converting fp32 activation operands as it goes, and takes bf16 weights;
// statistics (LayerNorm, softmax, cross-entropy) and everything else stay fp32. The norms and the MLP's
// activations, whose outputs only GEMMs read, can write them in bf16 alone (OperandOut): what the GEMMs would
// round them to, in half the memory.
#pragma once

#include "axonn/kernels/types.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace axonn {

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;
    // The element type of the GEMMs' inputs: f32, or bf16 in mixed precision.
    virtual DType gemm_dtype() const = 0;

    // On: a GEMM shape that can be computed more than one way is timed once, the first time it is met, and runs
    // the fastest way from then on (kernels/cpu/gemm_tuning.h). Off: one way always, so that two runs are bitwise
    // equal whatever the timings. On the CPU this holds for the whole process.
    virtual void set_gemm_tuning(bool on) = 0;

    // Where this backend's buffers live: tensors for it are made in this memory.
    virtual Memory memory() const = 0;
    // x[bytes] = 0
    virtual void zero(void* x, std::int64_t bytes) = 0;
    // Between the host's memory and the backend's: to the host waits until the bytes are there; from the host
    // returns once the host buffer may be reused.
    virtual void copy_to_host(void* host, void const* x, std::int64_t bytes) = 0;
    virtual void copy_from_host(void* x, void const* host, std::int64_t bytes) = 0;
    // Waits until every operation queued so far has run (a step's end, before it is timed).
    virtual void synchronize() = 0;
    // Measures the GEMM rate now (a second or so): one core's on a CPU, the device's on a GPU.
    virtual GemmRateMeasurement measure_gemm_rate() = 0;
    // Every GEMM shape timed more than one way so far, in the order met (none where the backend does not report).
    virtual std::vector<GemmTuningReport> gemm_tunings() const = 0;
    // The device its memory is on, for the collectives over it (DeviceContext{} for host memory).
    virtual DeviceContext device_context() const = 0;

    // out[n] = in[n] converted between fp32 and bf16 (or copied when the types agree)
    virtual void convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) = 0;

    // out[B,T,C] = wte[tokens − vocab_begin] (rows held here) + wpe[t] (if not null)
    // tokens[B,T], wte[vocab_rows,C], wpe[maxT,C] (kernels/cpu/encoder.h)
    virtual void encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B,
                                 int T, int C, int vocab_begin, int vocab_rows) = 0;
    virtual void encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B, int T,
                                  int C, int vocab_begin, int vocab_rows) = 0;

    // LayerNorm in two phases around an all-reduce of the statistics (kernels/cpu/layernorm.h):
    // stats[N,2] doubles, out[N,C] (fp32 or bf16), mean[N], rstd[N], inp[N,C], weight[C], bias[C]; C of C_total
    // channels here
    virtual void layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) = 0;
    virtual void layernorm_forward(OperandOut out, float* mean, float* rstd, float const* inp, float const* weight,
                                   float const* bias, double const* stats, std::int64_t N, int C, int C_total) = 0;
    virtual void layernorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                               float const* mean, float const* rstd, std::int64_t N, int C) = 0;
    virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                                    float const* weight, float const* mean, float const* rstd, double const* stats,
                                    std::int64_t N, int C, int C_total) = 0;

    // RMSNorm in two phases around an all-reduce of the statistics (kernels/cpu/rmsnorm.h), Llama's:
    // stats[N] doubles, out[N,C] (fp32 or bf16), rstd[N], inp[N,C], weight[C]; C of C_total channels here
    virtual void rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C) = 0;
    virtual void rmsnorm_forward(OperandOut out, float* rstd, float const* inp, float const* weight,
                                 double const* stats, std::int64_t N, int C, int C_total, double eps) = 0;
    virtual void rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                             float const* rstd, std::int64_t N, int C) = 0;
    virtual void rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp,
                                  float const* weight, float const* rstd, double const* stats, std::int64_t N, int C,
                                  int C_total) = 0;

    // out[M,N] = inp[M,K] · weight[N,K]ᵀ + bias[N]; inp fp32, or held only in bf16 for bf16 GEMMs
    virtual void linear_forward(float* out, GemmInput inp, WeightView weight, float const* bias, std::int64_t M,
                                std::int64_t K, std::int64_t N) = 0;
    // x[n] prepared once for the GEMMs that read it next (a Linear's dout, for dX and dW): with bf16 GEMMs a
    // rounded copy, which the backend keeps until its next gemm_input (or cross_entropy_backward or
    // gelu_bias_backward, which write the same operand); with fp32 GEMMs x itself.
    virtual GemmInput gemm_input(float const* x, std::int64_t n) = 0;
    // dinp[M,K] = dout[M,N] · weight[N,K] (written)
    virtual void linear_backward_input(float* dinp, GemmInput dout, WeightView weight, std::int64_t M,
                                       std::int64_t K, std::int64_t N) = 0;
    // dweight[N,K] (+)= dout[M,N]ᵀ · inp[M,K] as dweight_write says; dbias[N] += Σ rows (kernels/cpu/gemm.h)
    virtual void linear_backward_weight(float* dweight, float* dbias, GemmInput dout, GemmInput inp,
                                        std::int64_t M, std::int64_t K, std::int64_t N, GradWrite dweight_write) = 0;

    // Fused causal attention, never storing T×T (kernels/cpu/attention.h), with NH query heads of C/NH channels
    // and NKV key/value heads (grouped-query attention when NKV < NH; W = C + 2·NKV·C/NH):
    // out[B,T,C], lse[B,NH,T] (each query row's log-sum-exp, for the backward), qkv[B,T,W] = [q | k | v]; qkv may
    // be held only in bf16 where mixed precision runs attention's tile GEMMs in bf16 (attention_plan: in_bf16)
    virtual void attention_forward(float* out, float* lse, GemmInput qkv, int B, int T, int C, int NH,
                                   int NKV) = 0;
    // dqkv[B,T,W] (written), dout[B,T,C], qkv[B,T,W], out[B,T,C] and lse[B,NH,T] from the forward
    virtual void attention_backward(float* dqkv, float const* dout, GemmInput qkv, float const* out,
                                    float const* lse, int B, int T, int C, int NH, int NKV) = 0;

    // Attention of n new tokens per row over the keys and values of every earlier one, for generation
    // (kernels/cpu/attention_cache.h): the new keys and values join the cache at positions past ... past+n−1, then
    // out[B,n,C] = each head's causal softmax over positions 0 ... past+i. With an empty cache (past = 0) this is
    // attention_forward, writing lse[B,NH,n]; otherwise lse is untouched.
    // k_cache, v_cache[B,NKV,capacity,C/NH], qkv[B,n,W]
    virtual void attention_cached(float* out, float* lse, float* k_cache, float* v_cache, float const* qkv, int B,
                                  int n, int past, int capacity, int C, int NH, int NKV) = 0;

    // A Linear's bias and GELU in one pass (kernels/cpu/gelu.h): pre[N,F] += bias[F] (bias may be null), out[N,F] =
    // gelu(pre) (fp32 or bf16), and where kept_pre is not null pre + bias is kept as its bf16 rounding there alone
    // (pre is then left as the GEMM wrote it); backward: dpre[N,F] = gelu'(pre) · dout, dbias[F] += Σ_n dpre (may be
    // null), pre as held (fp32, or its bf16 rounding alone). dpre is returned as the operand of the GEMMs of the
    // Linear that made pre, which read nothing else (its bias gradient is dbias): as cross_entropy_backward's,
    // written into dpre (which may be dout) with fp32 GEMMs, only its bf16 rounding into the held operand with bf16
    // GEMMs.
    virtual void bias_gelu_forward(OperandOut out, float* pre, float const* bias, std::int64_t N, int F,
                                   bfloat16* kept_pre) = 0;
    virtual GemmInput gelu_bias_backward(float* dpre, float* dbias, HeldInput pre, float const* dout, std::int64_t N,
                                         int F) = 0;

    // out[N,F] = silu(gate) · up (fp32 or bf16)      inp[N,2F] = [gate | up] per row (kernels/cpu/swiglu.h);
    // dinp written, from inp as held (fp32, or in the backward its bf16 rounding alone)
    virtual void swiglu_forward(OperandOut out, float const* inp, std::int64_t N, int F) = 0;
    virtual void swiglu_backward(float* dinp, HeldInput inp, float const* dout, std::int64_t N, int F) = 0;

    // Rotary position embeddings in place (kernels/cpu/rope.h): each of `heads` heads of head_size channels at the
    // start of every row of x[B,T,stride], token t at position first_position + t; direction +1 embeds, −1 rotates
    // a gradient back.      inv_freq[head_size/2]
    virtual void rope_rotate(float* x, double const* inv_freq, int B, int T, int heads, int head_size,
                             std::int64_t stride, int first_position, int direction) = 0;

    // A matrix's column blocks one after another, and back (kernels/cpu/column_blocks.h):
    // out[parts, rows, block] = in[rows, parts·block]; join_columns the inverse. out and in do not overlap.
    virtual void split_columns(float* out, float const* in, std::int64_t rows, int parts, int block) = 0;
    virtual void join_columns(float* out, float const* in, std::int64_t rows, int parts, int block) = 0;

    // out[n] = a[n] + b[n]; out may be a or b (its backward needs no kernel: both inputs' gradient is the sum's)
    virtual void residual_forward(float* out, float const* a, float const* b, std::int64_t n) = 0;
    // The residual add and the next norm's statistics in one pass (kernels/cpu/residual.h): sum[N,C] = a + b (sum
    // may be a or b), stats of sum as layernorm_statistics ([N,2]) or rmsnorm_statistics ([N]) write them
    virtual void residual_norm_statistics(float* sum, float const* a, float const* b, double* stats, std::int64_t N,
                                          int C, bool layernorm) = 0;

    // Cross-entropy in phases around all-reduces of the row maxima and sums (kernels/cpu/cross_entropy.h):
    // row_max[N], sums[N,2] doubles, losses[N], logsumexp[N], logits[N,Vp_local], targets[N]; dlogits may alias
    // logits. This process holds vocabulary ids vocab_begin ... of which the first `valid` columns are real.
    virtual void cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local) = 0;
    virtual void cross_entropy_sums(double* sums, float const* logits, float const* row_max,
                                    std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                    int vocab_begin) = 0;
    // Both phases at once, where this process holds the whole vocabulary (no all-reduce between them): bitwise
    // cross_entropy_max then cross_entropy_sums, each row read from memory once.
    virtual void cross_entropy_max_and_sums(float* row_max, double* sums, float const* logits,
                                            std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                            int vocab_begin) = 0;
    virtual void cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                                      std::int32_t const* targets, std::int64_t N) = 0;
    // dlogits[N,Vp_local] = (softmax − onehot) · dlosses, returned as the operand of the LM head's GEMMs, which read
    // nothing else (gemm_input's): with fp32 GEMMs written into dlogits; with bf16 GEMMs only its bf16 rounding,
    // into the operand the backend holds until its next gemm_input, bitwise what gemm_input would round the fp32
    // values to (dlogits is then left as it was): the fp32 gradient never reaches memory.
    virtual GemmInput cross_entropy_backward(float* dlogits, float const* logits, float const* logsumexp,
                                             std::int32_t const* targets, float const* dlosses, std::int64_t N,
                                             int valid, int Vp_local, int vocab_begin) = 0;
    // All of it at once where this process holds the whole vocabulary (ids 0 ...) and dlosses is known before the
    // logits: bitwise cross_entropy_max_and_sums, cross_entropy_losses and cross_entropy_backward, each row read
    // from memory once; dlogits returned as cross_entropy_backward returns it (row_max and sums are not kept).
    virtual GemmInput cross_entropy_forward_backward(float* losses, float* logsumexp, float* dlogits,
                                                     float const* logits, std::int32_t const* targets,
                                                     float const* dlosses, std::int64_t N, int valid,
                                                     int Vp_local) = 0;

    // One AdamW step over a flat parameter range, and the squared norm used for clipping. param_bf16[n], when not
    // null, receives bf16(param) as updated: the GEMMs' copy refreshed in the same pass (mixed precision).
    virtual void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n,
                              AdamWStep const& step, bfloat16* param_bf16 = nullptr) = 0;
    virtual double sum_of_squares(float const* x, std::int64_t n) = 0;
};

// The backend called `name` ("cpu"; "cuda" where built with it) for GEMMs in `precision` (f32 or bf16). A CPU
// without a native bf16 GEMM emulates one (cpu::gemm_bf16_emulated): `emulation` then says why (else it stays
// empty).
std::unique_ptr<Backend> make_backend(std::string const& name, DType precision, std::string* emulation = nullptr);

}  // namespace axonn
