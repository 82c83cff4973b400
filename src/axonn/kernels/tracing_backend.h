// Tracing that wraps any backend once: every compute operation of the wrapped backend runs inside a span of the
// kernels' track of the trace (core/trace.h, recorded only while --trace or `axonn bench` asks), named after the
// operation and labelled with its kind (below), the categories of a step's breakdown (train/step_breakdown.h).
// The backends themselves carry no tracing; make_backend wraps each one it makes. On a device backend a span waits
// for the device at both ends, so that it times the kernels rather than their queueing.
#pragma once

#include "axonn/kernels/backend.h"

#include <memory>
#include <string>
#include <vector>

namespace axonn {

// The kinds of kernel, each span's category in the trace.
namespace kernel_kind {
inline constexpr char const gemm[] = "gemm";                // the Linears' GEMMs (forward, input and weight gradients)
inline constexpr char const attention[] = "attention";      // attention's forward and backward (their GEMMs within)
inline constexpr char const norm[] = "norm";                // LayerNorm and RMSNorm, their statistics included
inline constexpr char const elementwise[] = "elementwise";  // GELU, SwiGLU, RoPE, residuals, the embedding, the
                                                            // cross-entropy, conversions and zeroing
inline constexpr char const optimizer[] = "optimizer";      // AdamW and the gradient norm's sums of squares
}  // namespace kernel_kind

class TracingBackend final : public Backend {
public:
    explicit TracingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

    std::string name() const override;
    DType gemm_dtype() const override;
    void set_gemm_tuning(bool on) override;
    Memory memory() const override;
    void zero(void* x, std::int64_t bytes) override;
    void copy_to_host(void* host, void const* x, std::int64_t bytes) override;
    void copy_from_host(void* x, void const* host, std::int64_t bytes) override;
    void synchronize() override;
    GemmRateMeasurement measure_gemm_rate() override;
    std::vector<GemmTuningReport> gemm_tunings() const override;
    DeviceContext device_context() const override;
    void convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) override;
    void encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B, int T, int C,
                         int vocab_begin, int vocab_rows) override;
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
    void attention_backward(float* dqkv, float const* dout, GemmInput qkv, float const* out, float const* lse, int B,
                            int T, int C, int NH, int NKV) override;
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
                      bfloat16* param_bf16 = nullptr) override;
    double sum_of_squares(float const* x, std::int64_t n) override;

private:
    template <typename Operation>
    decltype(auto) traced(char const* kind, char const* name, Operation&& operation);

    std::unique_ptr<Backend> inner_;
};

}  // namespace axonn
