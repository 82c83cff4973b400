#include "axonn/kernels/cpu_backend.h"

#include "axonn/core/error.h"
#include "axonn/core/float_environment.h"
#include "axonn/kernels/cpu/adamw.h"
#include "axonn/kernels/cpu/attention.h"
#include "axonn/kernels/cpu/attention_cache.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/column_blocks.h"
#include "axonn/kernels/cpu/cross_entropy.h"
#include "axonn/kernels/cpu/encoder.h"
#include "axonn/kernels/cpu/gelu.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/gemm_rate.h"
#include "axonn/kernels/cpu/gemm_tuning.h"
#include "axonn/kernels/cpu/layernorm.h"
#include "axonn/kernels/cpu/residual.h"
#include "axonn/kernels/cpu/rmsnorm.h"
#include "axonn/kernels/cpu/rope.h"
#include "axonn/kernels/cpu/swiglu.h"

#include <fmt/format.h>

#include <cstring>

namespace axonn {

CpuBackend::CpuBackend(DType gemm_dtype) : gemm_dtype_(gemm_dtype) {
    AXONN_INVARIANT(gemm_dtype == DType::f32 || gemm_dtype == DType::bf16,
                    "the CPU backend's GEMMs take f32 or bf16, not {}", dtype_name(gemm_dtype));
    // Its kernels run on this thread and OpenMP's: none of them computes on denormal numbers.
    flush_denormals();
}

std::string CpuBackend::name() const {
    bool const emulated = gemm_dtype_ == DType::bf16 && !cpu::bf16_gemm_support().native;
    return fmt::format("cpu, {} GEMMs{} (oneDNN: {})", precision_name(gemm_dtype_), emulated ? " emulated in fp32" : "",
                       cpu::gemm_library_name());
}

void CpuBackend::set_gemm_tuning(bool on) { cpu::set_gemm_tuning(on); }

GemmRateMeasurement CpuBackend::measure_gemm_rate() {
    GemmRate const rate = measure_single_core_gemm_rate(gemm_dtype_);
    return {rate.flops_per_s, true, rate.isa};
}

std::vector<GemmTuningReport> CpuBackend::gemm_tunings() const {
    std::vector<GemmTuningReport> reports;
    for (cpu::GemmTuning const& tuning : cpu::gemm_tunings()) {
        cpu::GemmShape const& s = tuning.shape;
        reports.push_back({fmt::format("{} {}{} {}x{}x{}", s.bf16 ? "bf16" : "fp32", s.transpose_a ? 'T' : 'N',
                                       s.transpose_b ? 'T' : 'N', s.M, s.N, s.K),
                           2.0 * static_cast<double>(s.M) * static_cast<double>(s.N) * static_cast<double>(s.K),
                           tuning.whole_s, tuning.chunks_s, tuning.padded_s, tuning.halves_s,
                           cpu::gemm_variant_name(tuning.chosen)});
    }
    return reports;
}

void CpuBackend::zero(void* x, std::int64_t bytes) { std::memset(x, 0, static_cast<std::size_t>(bytes)); }
void CpuBackend::copy_to_host(void* host, void const* x, std::int64_t bytes) {
    std::memcpy(host, x, static_cast<std::size_t>(bytes));
}
void CpuBackend::copy_from_host(void* x, void const* host, std::int64_t bytes) {
    std::memcpy(x, host, static_cast<std::size_t>(bytes));
}

void CpuBackend::convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) {
    if (out_dtype == in_dtype) {
        std::memcpy(out, in, static_cast<std::size_t>(n) * dtype_size(in_dtype));
    } else if (out_dtype == DType::bf16 && in_dtype == DType::f32) {
        cpu::to_bf16(static_cast<bfloat16*>(out), static_cast<float const*>(in), n);
    } else if (out_dtype == DType::f32 && in_dtype == DType::bf16) {
        cpu::to_f32(static_cast<float*>(out), static_cast<bfloat16 const*>(in), n);
    } else {
        AXONN_INVARIANT(false, "no conversion from {} to {}", dtype_name(in_dtype), dtype_name(out_dtype));
    }
}

bfloat16 const* CpuBackend::bf16_operand(Scratch slot, float const* values, std::int64_t n) {
    Tensor& scratch = scratch_[slot];
    grow_to(scratch, n, DType::bf16);
    cpu::to_bf16(scratch.data<bfloat16>(), values, n);
    return scratch.data<bfloat16>();
}

bfloat16 const* CpuBackend::bf16_operand(Scratch slot, GemmInput x, std::int64_t n) {
    return x.rounded != nullptr ? x.rounded : bf16_operand(slot, x.values, n);
}

float const* CpuBackend::fp32_operand(GemmInput x) {
    AXONN_INVARIANT(x.values != nullptr, "an fp32 kernel got an operand held only in bf16");
    return x.values;
}

OperandOut CpuBackend::held_operand_out(float* values, std::int64_t n) {
    if (gemm_dtype_ != DType::bf16) return values;
    grow_to(scratch_[held_input], n, DType::bf16);
    return scratch_[held_input].data<bfloat16>();
}

GemmInput CpuBackend::gemm_input(float const* x, std::int64_t n) {
    if (gemm_dtype_ != DType::bf16) return GemmInput::unrounded(x);
    return {x, bf16_operand(held_input, x, n)};
}

void CpuBackend::encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B,
                                 int T, int C, int vocab_begin, int vocab_rows) {
    if (wte.dtype == DType::bf16) {
        cpu::encoder_forward(out, tokens, wte.bf16(), wpe, B, T, C, vocab_begin, vocab_rows);
    } else {
        cpu::encoder_forward(out, tokens, wte.f32(), wpe, B, T, C, vocab_begin, vocab_rows);
    }
}
void CpuBackend::encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B,
                                  int T, int C, int vocab_begin, int vocab_rows) {
    cpu::encoder_backward(dwte, dwpe, dout, tokens, B, T, C, vocab_begin, vocab_rows);
}
void CpuBackend::rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C) {
    cpu::rmsnorm_statistics(stats, inp, N, C);
}
void CpuBackend::rmsnorm_forward(OperandOut out, float* rstd, float const* inp, float const* weight,
                                 double const* stats, std::int64_t N, int C, int C_total, double eps) {
    out.visit([&](auto* y) { cpu::rmsnorm_forward(y, rstd, inp, weight, stats, N, C, C_total, eps); });
}
void CpuBackend::rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                             float const* rstd, std::int64_t N, int C) {
    cpu::rmsnorm_backward_statistics(stats, dout, inp, weight, rstd, N, C);
}
void CpuBackend::rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp,
                                  float const* weight, float const* rstd, double const* stats, std::int64_t N, int C,
                                  int C_total) {
    cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, stats, N, C, C_total);
}
void CpuBackend::swiglu_forward(OperandOut out, float const* inp, std::int64_t N, int F) {
    out.visit([&](auto* y) { cpu::swiglu_forward(y, inp, N, F); });
}
void CpuBackend::swiglu_backward(float* dinp, HeldInput inp, float const* dout, std::int64_t N, int F) {
    inp.visit([&](auto const* x) { cpu::swiglu_backward(dinp, x, dout, N, F); });
}
void CpuBackend::rope_rotate(float* x, double const* inv_freq, int B, int T, int heads, int head_size,
                             std::int64_t stride, int first_position, int direction) {
    cpu::rope_rotate(x, inv_freq, B, T, heads, head_size, stride, first_position, direction);
}
void CpuBackend::layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) {
    cpu::layernorm_statistics(stats, inp, N, C);
}
void CpuBackend::layernorm_forward(OperandOut out, float* mean, float* rstd, float const* inp, float const* weight,
                                   float const* bias, double const* stats, std::int64_t N, int C, int C_total) {
    out.visit([&](auto* y) { cpu::layernorm_forward(y, mean, rstd, inp, weight, bias, stats, N, C, C_total); });
}
void CpuBackend::layernorm_backward_statistics(double* stats, float const* dout, float const* inp,
                                               float const* weight, float const* mean, float const* rstd,
                                               std::int64_t N, int C) {
    cpu::layernorm_backward_statistics(stats, dout, inp, weight, mean, rstd, N, C);
}
void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                                    float const* weight, float const* mean, float const* rstd, double const* stats,
                                    std::int64_t N, int C, int C_total) {
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, stats, N, C, C_total);
}
void CpuBackend::linear_forward(float* out, GemmInput inp, WeightView weight, float const* bias, std::int64_t M,
                                std::int64_t K, std::int64_t N) {
    AXONN_INVARIANT(weight.dtype == gemm_dtype_, "a {} GEMM got {} weights", dtype_name(gemm_dtype_),
                    dtype_name(weight.dtype));
    if (gemm_dtype_ == DType::bf16) {
        cpu::linear_forward(out, bf16_operand(first_operand, inp, M * K), weight.bf16(), bias, M, K, N);
    } else {
        cpu::linear_forward(out, fp32_operand(inp), weight.f32(), bias, M, K, N);
    }
}
void CpuBackend::linear_backward_input(float* dinp, GemmInput dout, WeightView weight, std::int64_t M,
                                       std::int64_t K, std::int64_t N) {
    AXONN_INVARIANT(weight.dtype == gemm_dtype_, "a {} GEMM got {} weights", dtype_name(gemm_dtype_),
                    dtype_name(weight.dtype));
    if (gemm_dtype_ == DType::bf16) {
        cpu::linear_backward_input(dinp, bf16_operand(first_operand, dout, M * N), weight.bf16(), M, K, N);
    } else {
        cpu::linear_backward_input(dinp, dout.values, weight.f32(), M, K, N);
    }
}
void CpuBackend::linear_backward_weight(float* dweight, float* dbias, GemmInput dout, GemmInput inp,
                                        std::int64_t M, std::int64_t K, std::int64_t N, GradWrite dweight_write) {
    if (gemm_dtype_ == DType::bf16) {
        cpu::linear_backward_weight(dweight, dbias, bf16_operand(first_operand, dout, M * N), dout.values,
                                    bf16_operand(second_operand, inp, M * K), M, K, N, dweight_write);
    } else {
        cpu::linear_backward_weight(dweight, dbias, dout.values, fp32_operand(inp), M, K, N, dweight_write);
    }
}
void CpuBackend::attention_forward(float* out, float* lse, GemmInput qkv, int B, int T, int C, int NH, int NKV) {
    if (gemm_dtype_ == DType::bf16 && cpu::attention_in_bf16(T)) {
        std::int64_t const BT = static_cast<std::int64_t>(B) * T;
        cpu::attention_forward_bf16(out, lse, bf16_operand(first_operand, qkv, BT * qkv_width(C, NH, NKV)), B, T, C,
                                    NH, NKV);
    } else {
        cpu::attention_forward(out, lse, fp32_operand(qkv), B, T, C, NH, NKV);
    }
}
void CpuBackend::attention_backward(float* dqkv, float const* dout, GemmInput qkv, float const* out,
                                    float const* lse, int B, int T, int C, int NH, int NKV) {
    if (gemm_dtype_ == DType::bf16 && cpu::attention_in_bf16(T)) {
        std::int64_t const BT = static_cast<std::int64_t>(B) * T;
        bfloat16 const* qkv_bf16 = bf16_operand(first_operand, qkv, BT * qkv_width(C, NH, NKV));
        cpu::attention_backward_bf16(dqkv, bf16_operand(second_operand, dout, BT * C), qkv_bf16, out, lse, B, T, C,
                                     NH, NKV);
    } else {
        cpu::attention_backward(dqkv, dout, fp32_operand(qkv), out, lse, B, T, C, NH, NKV);
    }
}
void CpuBackend::attention_cached(float* out, float* lse, float* k_cache, float* v_cache, float const* qkv, int B,
                                  int n, int past, int capacity, int C, int NH, int NKV) {
    cpu::kv_cache_append(k_cache, v_cache, qkv, B, n, past, capacity, C, NH, NKV);
    // A prompt's first tokens see no cache: the fused kernel computes them as a training forward does.
    if (past == 0) {
        attention_forward(out, lse, GemmInput(qkv), B, n, C, NH, NKV);
    } else {
        cpu::attention_over_cache(out, qkv, k_cache, v_cache, B, n, past, capacity, C, NH, NKV);
    }
}
void CpuBackend::bias_gelu_forward(OperandOut out, float* pre, float const* bias, std::int64_t N, int F,
                                   bfloat16* kept_pre) {
    out.visit([&](auto* y) {
        if (kept_pre != nullptr) {
            cpu::bias_gelu_forward(y, kept_pre, pre, bias, N, F);
        } else {
            cpu::bias_gelu_forward(y, pre, bias, N, F);
        }
    });
}
GemmInput CpuBackend::gelu_bias_backward(float* dpre, float* dbias, HeldInput pre, float const* dout, std::int64_t N,
                                         int F) {
    OperandOut const out = held_operand_out(dpre, N * F);
    out.visit([&](auto* y) { pre.visit([&](auto const* u) { cpu::gelu_bias_backward(y, dbias, u, dout, N, F); }); });
    return out.as_input();
}
void CpuBackend::split_columns(float* out, float const* in, std::int64_t rows, int parts, int block) {
    cpu::split_columns(out, in, rows, parts, block);
}
void CpuBackend::join_columns(float* out, float const* in, std::int64_t rows, int parts, int block) {
    cpu::join_columns(out, in, rows, parts, block);
}
void CpuBackend::residual_forward(float* out, float const* a, float const* b, std::int64_t n) {
    cpu::residual_forward(out, a, b, n);
}
void CpuBackend::residual_norm_statistics(float* sum, float const* a, float const* b, double* stats, std::int64_t N,
                                          int C, bool layernorm) {
    cpu::residual_norm_statistics(sum, a, b, stats, N, C, layernorm);
}
void CpuBackend::cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local) {
    cpu::cross_entropy_max(row_max, logits, N, valid, Vp_local);
}
void CpuBackend::cross_entropy_sums(double* sums, float const* logits, float const* row_max,
                                    std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                    int vocab_begin) {
    cpu::cross_entropy_sums(sums, logits, row_max, targets, N, valid, Vp_local, vocab_begin);
}
void CpuBackend::cross_entropy_max_and_sums(float* row_max, double* sums, float const* logits,
                                            std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                            int vocab_begin) {
    cpu::cross_entropy_max_and_sums(row_max, sums, logits, targets, N, valid, Vp_local, vocab_begin);
}
void CpuBackend::cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                                      std::int32_t const* targets, std::int64_t N) {
    cpu::cross_entropy_losses(losses, logsumexp, row_max, sums, targets, N);
}
GemmInput CpuBackend::cross_entropy_backward(float* dlogits, float const* logits, float const* logsumexp,
                                             std::int32_t const* targets, float const* dlosses, std::int64_t N,
                                             int valid, int Vp_local, int vocab_begin) {
    OperandOut const out = held_operand_out(dlogits, N * Vp_local);
    out.visit([&](auto* y) {
        cpu::cross_entropy_backward(y, logits, logsumexp, targets, dlosses, N, valid, Vp_local, vocab_begin);
    });
    return out.as_input();
}
GemmInput CpuBackend::cross_entropy_forward_backward(float* losses, float* logsumexp, float* dlogits,
                                                     float const* logits, std::int32_t const* targets,
                                                     float const* dlosses, std::int64_t N, int valid, int Vp_local) {
    OperandOut const out = held_operand_out(dlogits, N * Vp_local);
    out.visit([&](auto* y) {
        cpu::cross_entropy_forward_backward(losses, logsumexp, y, logits, targets, dlosses, N, valid, Vp_local);
    });
    return out.as_input();
}
void CpuBackend::adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n,
                              AdamWStep const& step, bfloat16* param_bf16) {
    cpu::adamw_update(param, grad, m, v, n, step, param_bf16);
}
double CpuBackend::sum_of_squares(float const* x, std::int64_t n) {
    return cpu::sum_of_squares(x, n);
}

}  // namespace axonn
