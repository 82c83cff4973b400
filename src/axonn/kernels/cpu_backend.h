// The CPU implementation of Backend: oneDNN GEMMs and the templated kernels in kernels/cpu/. Every operation is a
// span of the trace when one is recorded (core/trace.h).
//
// In bf16 (mixed precision) the Linear GEMMs take bf16 weights and convert their fp32 activation operands into
// two scratch buffers as they go (kept as tensors, so the memory model counts them); all else is fp32.
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"

namespace axonn {

class CpuBackend : public Backend {
public:
    // gemm_dtype: f32, or bf16 (native where cpu::bf16_gemm_support() says so, else emulated).
    explicit CpuBackend(DType gemm_dtype = DType::f32);

    std::string name() const override;
    DType gemm_dtype() const override { return gemm_dtype_; }
    void set_gemm_tuning(bool on) override;
    Memory memory() const override { return Memory::host; }
    void zero(void* x, std::int64_t bytes) override;
    void copy_to_host(void* host, void const* x, std::int64_t bytes) override;
    void copy_from_host(void* x, void const* host, std::int64_t bytes) override;
    void synchronize() override {}
    GemmRateMeasurement measure_gemm_rate() override;
    std::vector<GemmTuningReport> gemm_tunings() const override;
    DeviceContext device_context() const override { return {}; }
    void convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) override;
    void encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B, int T,
                         int C, int vocab_begin, int vocab_rows) override;
    void encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B, int T, int C,
                          int vocab_begin, int vocab_rows) override;
    void layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) override;
    void rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C) override;
    void rmsnorm_forward(OperandOut out, float* rstd, float const* inp, float const* weight, double const* stats,
                         std::int64_t N, int C, int C_total, double eps) override;
    void rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                     float const* rstd, std::int64_t N, int C) override;
    void rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp, float const* weight,
                          float const* rstd, double const* stats, std::int64_t N, int C, int C_total) override;
    void swiglu_forward(OperandOut out, float const* inp, std::int64_t N, int F) override;
    void swiglu_backward(float* dinp, HeldInput inp, float const* dout, std::int64_t N, int F) override;
    void rope_rotate(float* x, double const* inv_freq, int B, int T, int heads, int head_size, std::int64_t stride,
                     int first_position, int direction) override;
    void layernorm_forward(OperandOut out, float* mean, float* rstd, float const* inp, float const* weight,
                           float const* bias, double const* stats, std::int64_t N, int C, int C_total) override;
    void layernorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                       float const* mean, float const* rstd, std::int64_t N, int C) override;
    void layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                            float const* weight, float const* mean, float const* rstd, double const* stats,
                            std::int64_t N, int C, int C_total) override;
    void linear_forward(float* out, GemmInput inp, WeightView weight, float const* bias, std::int64_t M,
                        std::int64_t K, std::int64_t N) override;
    GemmInput gemm_input(float const* x, std::int64_t n) override;
    void linear_backward_input(float* dinp, GemmInput dout, WeightView weight, std::int64_t M, std::int64_t K,
                               std::int64_t N) override;
    void linear_backward_weight(float* dweight, float* dbias, GemmInput dout, GemmInput inp, std::int64_t M,
                                std::int64_t K, std::int64_t N, GradWrite dweight_write) override;
    void attention_forward(float* out, float* lse, GemmInput qkv, int B, int T, int C, int NH, int NKV) override;
    void attention_backward(float* dqkv, float const* dout, GemmInput qkv, float const* out, float const* lse,
                            int B, int T, int C, int NH, int NKV) override;
    void attention_cached(float* out, float* lse, float* k_cache, float* v_cache, float const* qkv, int B, int n,
                          int past, int capacity, int C, int NH, int NKV) override;
    void bias_gelu_forward(OperandOut out, float* pre, float const* bias, std::int64_t N, int F,
                           bfloat16* kept_pre) override;
    GemmInput gelu_bias_backward(float* dpre, float* dbias, HeldInput pre, float const* dout, std::int64_t N,
                                 int F) override;
    void split_columns(float* out, float const* in, std::int64_t rows, int parts, int block) override;
    void join_columns(float* out, float const* in, std::int64_t rows, int parts, int block) override;
    void residual_forward(float* out, float const* a, float const* b, std::int64_t n) override;
    void residual_norm_statistics(float* sum, float const* a, float const* b, double* stats, std::int64_t N, int C,
                                  bool layernorm) override;
    void cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local) override;
    void cross_entropy_sums(double* sums, float const* logits, float const* row_max, std::int32_t const* targets,
                            std::int64_t N, int valid, int Vp_local, int vocab_begin) override;
    void cross_entropy_max_and_sums(float* row_max, double* sums, float const* logits, std::int32_t const* targets,
                                    std::int64_t N, int valid, int Vp_local, int vocab_begin) override;
    void cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                              std::int32_t const* targets, std::int64_t N) override;
    GemmInput cross_entropy_backward(float* dlogits, float const* logits, float const* logsumexp,
                                     std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                                     int Vp_local, int vocab_begin) override;
    GemmInput cross_entropy_forward_backward(float* losses, float* logsumexp, float* dlogits, float const* logits,
                                             std::int32_t const* targets, float const* dlosses, std::int64_t N,
                                             int valid, int Vp_local) override;
    void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWStep const& step,
                      bfloat16* param_bf16) override;
    double sum_of_squares(float const* x, std::int64_t n) override;

private:
    // Scratch buffers for bf16 copies, which grow to fit: the two operands a kernel rounds for itself, and
    // gemm_input's copy, which outlives the kernels that read it.
    enum Scratch { first_operand, second_operand, held_input, scratch_count };
    // values[n] rounded to bf16 in a scratch buffer
    bfloat16 const* bf16_operand(Scratch slot, float const* values, std::int64_t n);
    // x[n] in bf16: its gemm_input copy, or rounded into `slot`
    bfloat16 const* bf16_operand(Scratch slot, GemmInput x, std::int64_t n);
    // x's fp32 values, which an fp32 GEMM needs: an operand held only in bf16 is a caller's mistake
    static float const* fp32_operand(GemmInput x);
    // Where a kernel writes the n values that only the next GEMMs read (gemm_input's operand): `values` with fp32
    // GEMMs, the held_input scratch with bf16 GEMMs.
    OperandOut held_operand_out(float* values, std::int64_t n);

    DType gemm_dtype_;
    Tensor scratch_[scratch_count];
};

}  // namespace axonn
