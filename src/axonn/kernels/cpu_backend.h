// The CPU implementation of Backend: oneDNN GEMMs and the templated kernels in kernels/cpu/, fp32. Every
// operation is a span of the trace when one is recorded (core/trace.h).
#pragma once

#include "axonn/kernels/backend.h"

namespace axonn {

class CpuBackend final : public Backend {
public:
    std::string name() const override;
    void encoder_forward(float* out, std::int32_t const* tokens, float const* wte, float const* wpe, int B, int T,
                         int C, int vocab_begin, int vocab_rows) override;
    void encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B, int T, int C,
                          int vocab_begin, int vocab_rows) override;
    void layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) override;
    void layernorm_forward(float* out, float* mean, float* rstd, float const* inp, float const* weight,
                           float const* bias, double const* stats, std::int64_t N, int C, int C_total) override;
    void layernorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                       float const* mean, float const* rstd, std::int64_t N, int C) override;
    void layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                            float const* weight, float const* mean, float const* rstd, double const* stats,
                            std::int64_t N, int C, int C_total) override;
    void linear_forward(float* out, float const* inp, float const* weight, float const* bias, std::int64_t M,
                        std::int64_t K, std::int64_t N) override;
    void linear_backward_input(float* dinp, float const* dout, float const* weight, std::int64_t M, std::int64_t K,
                               std::int64_t N) override;
    void linear_backward_weight(float* dweight, float* dbias, float const* dout, float const* inp, std::int64_t M,
                                std::int64_t K, std::int64_t N, GradWrite dweight_write) override;
    void attention_forward(float* out, float* att, float const* qkv, int B, int T, int C, int NH) override;
    void attention_backward(float* dqkv, float const* dout, float const* qkv, float const* att, int B, int T, int C,
                            int NH) override;
    void gelu_forward(float* out, float const* inp, std::int64_t n) override;
    void gelu_backward(float* dinp, float const* inp, float const* dout, std::int64_t n) override;
    void residual_forward(float* out, float const* a, float const* b, std::int64_t n) override;
    void residual_backward(float* da, float* db, float const* dout, std::int64_t n) override;
    void cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local) override;
    void cross_entropy_sums(double* sums, float const* logits, float const* row_max, std::int32_t const* targets,
                            std::int64_t N, int valid, int Vp_local, int vocab_begin) override;
    void cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                              std::int32_t const* targets, std::int64_t N) override;
    void cross_entropy_backward(float* dlogits, float const* logits, float const* logsumexp,
                                std::int32_t const* targets, float const* dlosses, std::int64_t N, int valid,
                                int Vp_local, int vocab_begin) override;
    void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n,
                      AdamWStep const& step) override;
    double sum_of_squares(float const* x, std::int64_t n) override;
};

}  // namespace axonn
