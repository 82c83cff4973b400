// The CUDA implementation of Backend (built with -DAXONN_CUDA=ON): every pointer an operation takes is GPU
// memory on this backend's device, except rope_rotate's inv_freq (host constants). Operations are queued on the
// backend's compute stream and return before they finish; sum_of_squares, which returns a number, waits.
//
// GEMMs run through cuBLASLt (kernels/cuda/gemm.h): fp32 without TF32, or bf16 inputs with fp32 accumulation. In
// bf16 the fp32 activation operands are rounded into two scratch buffers as on the CPU; attention runs on the
// tensor cores in bf16 for heads of 64 or 128 channels, and in fp32 otherwise (kernels/cuda/kernels.h).
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/kernels/cuda/gemm.h"

#include <cuda_runtime.h>

#include <memory>
#include <vector>

namespace axonn {

class CudaBackend final : public Backend {
public:
    // device: the CUDA device index this process uses (a rank's local rank on a node of several GPUs).
    CudaBackend(DType gemm_dtype, int device);
    ~CudaBackend() override;

    cudaStream_t stream() const { return stream_; }
    int device() const { return device_; }

    std::string name() const override;
    DType gemm_dtype() const override { return gemm_dtype_; }
    void set_gemm_tuning(bool on) override;
    Memory memory() const override { return Memory::device; }
    void zero(void* x, std::int64_t bytes) override;
    void copy_to_host(void* host, void const* x, std::int64_t bytes) override;
    void copy_from_host(void* x, void const* host, std::int64_t bytes) override;
    // Waits until everything queued has run (and reports a kernel's failure, if one failed).
    void synchronize() override;
    GemmRateMeasurement measure_gemm_rate() override;
    std::vector<GemmTuningReport> gemm_tunings() const override { return {}; }  // cuBLASLt's choices, unreported
    DeviceContext device_context() const override { return {device_, stream_}; }
    void convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) override;
    void encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B, int T,
                         int C, int vocab_begin, int vocab_rows) override;
    void encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B, int T, int C,
                          int vocab_begin, int vocab_rows) override;
    void layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) override;
    void layernorm_forward(OperandOut out, float* mean, float* rstd, float const* inp, float const* weight,
                           float const* bias, double const* stats, std::int64_t N, int C, int C_total) override;
    void layernorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                       float const* mean, float const* rstd, std::int64_t N, int C) override;
    void layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                            float const* weight, float const* mean, float const* rstd, double const* stats,
                            std::int64_t N, int C, int C_total) override;
    void rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C) override;
    void rmsnorm_forward(OperandOut out, float* rstd, float const* inp, float const* weight, double const* stats,
                         std::int64_t N, int C, int C_total, double eps) override;
    void rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                     float const* rstd, std::int64_t N, int C) override;
    void rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp, float const* weight,
                          float const* rstd, double const* stats, std::int64_t N, int C, int C_total) override;
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
    void swiglu_forward(OperandOut out, float const* inp, std::int64_t N, int F) override;
    void swiglu_backward(float* dinp, HeldInput inp, float const* dout, std::int64_t N, int F) override;
    void rope_rotate(float* x, double const* inv_freq, int B, int T, int heads, int head_size, std::int64_t stride,
                     int first_position, int direction) override;
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
    // Scratch for bf16 copies in GPU memory: the two operands a GEMM rounds for itself, and gemm_input's copy,
    // which outlives the GEMMs that read it.
    enum Scratch { first_operand, second_operand, held_input, scratch_count };
    // The GEMM operand `values[n]` as the GEMMs take it: itself in fp32, else rounded to bf16 in scratch `slot`.
    void const* gemm_operand(Scratch slot, float const* values, std::int64_t n);
    // The same for an input that gemm_input may have rounded already.
    void const* gemm_operand(Scratch slot, GemmInput x, std::int64_t n);
    // Where a kernel writes the n values that only the next GEMMs read (gemm_input's operand): `values` with fp32
    // GEMMs, the held_input scratch with bf16 GEMMs.
    OperandOut held_operand_out(float* values, std::int64_t n);
    void check_weight(WeightView weight) const;
    // Whether attention of heads of C/NH channels runs on the tensor cores (bf16, heads of 64 or 128).
    bool on_tensor_cores(int C, int NH) const;
    // Attention's qkv[n] in fp32, as its kernels read it (they round it themselves on the tensor cores).
    float const* attention_qkv(GemmInput qkv, std::int64_t n);

    DType gemm_dtype_;
    int device_;
    cudaStream_t stream_ = nullptr;
    std::unique_ptr<cuda::Gemm> gemm_;  // made after the device is selected: its workspace lives there
    std::string device_name_;
    // Scratch in GPU memory, device tensors (made once the backend has installed the device allocator).
    Tensor scratch_[scratch_count];
    Tensor row_dot_;                     // attention's backward: [B,NH,T]
    Tensor widened_qkv_;                 // attention's qkv held only in bf16, widened
    Tensor inv_freq_;                    // rope's frequencies, copied from the host
    std::vector<double> inv_freq_host_;  // what inv_freq_ holds
    Tensor norm_partials_;               // sum_of_squares' per-block sums
};

}  // namespace axonn
