#include "axonn/kernels/tracing_backend.h"

#include "axonn/core/trace.h"

#include <type_traits>

namespace axonn {
namespace {

// Waits for the device's queued work, while spans are recorded, on a backend whose operations only queue it.
void wait_if_recording(Backend& inner) {
    if (TraceRecorder::active() != nullptr && inner.memory() == Memory::device) inner.synchronize();
}

}  // namespace

// Runs `operation` inside a span named `name` of kind `kind` on the kernels' track, and returns what it returns.
// A device backend's operation returns once its kernels are queued: while spans are recorded, the device is waited
// for before the span opens and before it closes, so that the span holds the kernels' time on the device rather
// than the host's time to queue them. That exposes each launch and forbids queueing ahead, so a device's traced
// steps are slower than its untraced ones (axonn bench times the two apart).
template <typename Operation>
decltype(auto) TracingBackend::traced(char const* kind, char const* name, Operation&& operation) {
    wait_if_recording(*inner_);
    TraceSpan const span(name, TraceTrack::kernels, kind);
    if constexpr (std::is_void_v<decltype(operation())>) {
        operation();
        wait_if_recording(*inner_);
    } else {
        auto result = operation();
        wait_if_recording(*inner_);
        return result;
    }
}

std::string TracingBackend::name() const { return inner_->name(); }

DType TracingBackend::gemm_dtype() const { return inner_->gemm_dtype(); }

void TracingBackend::set_gemm_tuning(bool on) { inner_->set_gemm_tuning(on); }

Memory TracingBackend::memory() const { return inner_->memory(); }

void TracingBackend::zero(void* x, std::int64_t bytes) {
    return traced(kernel_kind::elementwise, "zero", [&] { return inner_->zero(x, bytes); });
}

void TracingBackend::copy_to_host(void* host, void const* x, std::int64_t bytes) {
    inner_->copy_to_host(host, x, bytes);
}

void TracingBackend::copy_from_host(void* x, void const* host, std::int64_t bytes) {
    inner_->copy_from_host(x, host, bytes);
}

void TracingBackend::synchronize() { inner_->synchronize(); }

GemmRateMeasurement TracingBackend::measure_gemm_rate() { return inner_->measure_gemm_rate(); }

std::vector<GemmTuningReport> TracingBackend::gemm_tunings() const { return inner_->gemm_tunings(); }

DeviceContext TracingBackend::device_context() const { return inner_->device_context(); }

void TracingBackend::convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) {
    return traced(kernel_kind::elementwise, "convert",
                  [&] { return inner_->convert(out, out_dtype, in, in_dtype, n); });
}

void TracingBackend::encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B,
                                     int T, int C, int vocab_begin, int vocab_rows) {
    return traced(kernel_kind::elementwise, "encoder_forward",
                  [&] { return inner_->encoder_forward(out, tokens, wte, wpe, B, T, C, vocab_begin, vocab_rows); });
}

void TracingBackend::encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B,
                                      int T, int C, int vocab_begin, int vocab_rows) {
    return traced(kernel_kind::elementwise, "encoder_backward",
                  [&] { return inner_->encoder_backward(dwte, dwpe, dout, tokens, B, T, C, vocab_begin, vocab_rows); });
}

void TracingBackend::layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) {
    return traced(kernel_kind::norm, "layernorm_statistics",
                  [&] { return inner_->layernorm_statistics(stats, inp, N, C); });
}

void TracingBackend::layernorm_forward(OperandOut out, float* mean, float* rstd, float const* inp, float const* weight,
                                       float const* bias, double const* stats, std::int64_t N, int C, int C_total) {
    return traced(kernel_kind::norm, "layernorm_forward",
                  [&] { return inner_->layernorm_forward(out, mean, rstd, inp, weight, bias, stats, N, C, C_total); });
}

void TracingBackend::layernorm_backward_statistics(double* stats, float const* dout, float const* inp,
                                                   float const* weight, float const* mean, float const* rstd,
                                                   std::int64_t N, int C) {
    return traced(kernel_kind::norm, "layernorm_backward_statistics",
                  [&] { return inner_->layernorm_backward_statistics(stats, dout, inp, weight, mean, rstd, N, C); });
}

void TracingBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                                        float const* weight, float const* mean, float const* rstd, double const* stats,
                                        std::int64_t N, int C, int C_total) {
    return traced(kernel_kind::norm, "layernorm_backward", [&] {
        return inner_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, stats, N, C, C_total);
    });
}

void TracingBackend::rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C) {
    return traced(kernel_kind::norm, "rmsnorm_statistics",
                  [&] { return inner_->rmsnorm_statistics(stats, inp, N, C); });
}

void TracingBackend::rmsnorm_forward(OperandOut out, float* rstd, float const* inp, float const* weight,
                                     double const* stats, std::int64_t N, int C, int C_total, double eps) {
    return traced(kernel_kind::norm, "rmsnorm_forward",
                  [&] { return inner_->rmsnorm_forward(out, rstd, inp, weight, stats, N, C, C_total, eps); });
}

void TracingBackend::rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp,
                                                 float const* weight, float const* rstd, std::int64_t N, int C) {
    return traced(kernel_kind::norm, "rmsnorm_backward_statistics",
                  [&] { return inner_->rmsnorm_backward_statistics(stats, dout, inp, weight, rstd, N, C); });
}

void TracingBackend::rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp,
                                      float const* weight, float const* rstd, double const* stats, std::int64_t N,
                                      int C, int C_total) {
    return traced(kernel_kind::norm, "rmsnorm_backward", [&] {
        return inner_->rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, stats, N, C, C_total);
    });
}

void TracingBackend::linear_forward(float* out, GemmInput inp, WeightView weight, float const* bias, std::int64_t M,
                                    std::int64_t K, std::int64_t N) {
    return traced(kernel_kind::gemm, "linear_forward",
                  [&] { return inner_->linear_forward(out, inp, weight, bias, M, K, N); });
}

GemmInput TracingBackend::gemm_input(float const* x, std::int64_t n) {
    return traced(kernel_kind::elementwise, "gemm_input", [&] { return inner_->gemm_input(x, n); });
}

void TracingBackend::linear_backward_input(float* dinp, GemmInput dout, WeightView weight, std::int64_t M,
                                           std::int64_t K, std::int64_t N) {
    return traced(kernel_kind::gemm, "linear_backward_input",
                  [&] { return inner_->linear_backward_input(dinp, dout, weight, M, K, N); });
}

void TracingBackend::linear_backward_weight(float* dweight, float* dbias, GemmInput dout, GemmInput inp,
                                            std::int64_t M, std::int64_t K, std::int64_t N, GradWrite dweight_write) {
    return traced(kernel_kind::gemm, "linear_backward_weight",
                  [&] { return inner_->linear_backward_weight(dweight, dbias, dout, inp, M, K, N, dweight_write); });
}

void TracingBackend::attention_forward(float* out, float* lse, GemmInput qkv, int B, int T, int C, int NH, int NKV) {
    return traced(kernel_kind::attention, "attention_forward",
                  [&] { return inner_->attention_forward(out, lse, qkv, B, T, C, NH, NKV); });
}

void TracingBackend::attention_backward(float* dqkv, float const* dout, GemmInput qkv, float const* out,
                                        float const* lse, int B, int T, int C, int NH, int NKV) {
    return traced(kernel_kind::attention, "attention_backward",
                  [&] { return inner_->attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH, NKV); });
}

void TracingBackend::attention_cached(float* out, float* lse, float* k_cache, float* v_cache, float const* qkv, int B,
                                      int n, int past, int capacity, int C, int NH, int NKV) {
    return traced(kernel_kind::attention, "attention_cached", [&] {
        return inner_->attention_cached(out, lse, k_cache, v_cache, qkv, B, n, past, capacity, C, NH, NKV);
    });
}

void TracingBackend::bias_gelu_forward(OperandOut out, float* pre, float const* bias, std::int64_t N, int F,
                                       bfloat16* kept_pre) {
    return traced(kernel_kind::elementwise, "bias_gelu_forward",
                  [&] { return inner_->bias_gelu_forward(out, pre, bias, N, F, kept_pre); });
}

GemmInput TracingBackend::gelu_bias_backward(float* dpre, float* dbias, HeldInput pre, float const* dout,
                                             std::int64_t N, int F) {
    return traced(kernel_kind::elementwise, "gelu_bias_backward",
                  [&] { return inner_->gelu_bias_backward(dpre, dbias, pre, dout, N, F); });
}

void TracingBackend::swiglu_forward(OperandOut out, float const* inp, std::int64_t N, int F) {
    return traced(kernel_kind::elementwise, "swiglu_forward", [&] { return inner_->swiglu_forward(out, inp, N, F); });
}

void TracingBackend::swiglu_backward(float* dinp, HeldInput inp, float const* dout, std::int64_t N, int F) {
    return traced(kernel_kind::elementwise, "swiglu_backward",
                  [&] { return inner_->swiglu_backward(dinp, inp, dout, N, F); });
}

void TracingBackend::rope_rotate(float* x, double const* inv_freq, int B, int T, int heads, int head_size,
                                 std::int64_t stride, int first_position, int direction) {
    return traced(kernel_kind::elementwise, "rope_rotate", [&] {
        return inner_->rope_rotate(x, inv_freq, B, T, heads, head_size, stride, first_position, direction);
    });
}

void TracingBackend::split_columns(float* out, float const* in, std::int64_t rows, int parts, int block) {
    return traced(kernel_kind::elementwise, "split_columns",
                  [&] { return inner_->split_columns(out, in, rows, parts, block); });
}

void TracingBackend::join_columns(float* out, float const* in, std::int64_t rows, int parts, int block) {
    return traced(kernel_kind::elementwise, "join_columns",
                  [&] { return inner_->join_columns(out, in, rows, parts, block); });
}

void TracingBackend::residual_forward(float* out, float const* a, float const* b, std::int64_t n) {
    return traced(kernel_kind::elementwise, "residual_forward", [&] { return inner_->residual_forward(out, a, b, n); });
}

void TracingBackend::residual_norm_statistics(float* sum, float const* a, float const* b, double* stats,
                                              std::int64_t N, int C, bool layernorm) {
    return traced(kernel_kind::norm, "residual_norm_statistics",
                  [&] { return inner_->residual_norm_statistics(sum, a, b, stats, N, C, layernorm); });
}

void TracingBackend::cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local) {
    return traced(kernel_kind::elementwise, "cross_entropy_max",
                  [&] { return inner_->cross_entropy_max(row_max, logits, N, valid, Vp_local); });
}

void TracingBackend::cross_entropy_sums(double* sums, float const* logits, float const* row_max,
                                        std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                        int vocab_begin) {
    return traced(kernel_kind::elementwise, "cross_entropy_sums", [&] {
        return inner_->cross_entropy_sums(sums, logits, row_max, targets, N, valid, Vp_local, vocab_begin);
    });
}

void TracingBackend::cross_entropy_max_and_sums(float* row_max, double* sums, float const* logits,
                                                std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                                int vocab_begin) {
    return traced(kernel_kind::elementwise, "cross_entropy_max_and_sums", [&] {
        return inner_->cross_entropy_max_and_sums(row_max, sums, logits, targets, N, valid, Vp_local, vocab_begin);
    });
}

void TracingBackend::cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                                          std::int32_t const* targets, std::int64_t N) {
    return traced(kernel_kind::elementwise, "cross_entropy_losses",
                  [&] { return inner_->cross_entropy_losses(losses, logsumexp, row_max, sums, targets, N); });
}

GemmInput TracingBackend::cross_entropy_backward(float* dlogits, float const* logits, float const* logsumexp,
                                                 std::int32_t const* targets, float const* dlosses, std::int64_t N,
                                                 int valid, int Vp_local, int vocab_begin) {
    return traced(kernel_kind::elementwise, "cross_entropy_backward", [&] {
        return inner_->cross_entropy_backward(dlogits, logits, logsumexp, targets, dlosses, N, valid, Vp_local,
                                              vocab_begin);
    });
}
GemmInput TracingBackend::cross_entropy_forward_backward(float* losses, float* logsumexp, float* dlogits,
                                                         float const* logits, std::int32_t const* targets,
                                                         float const* dlosses, std::int64_t N, int valid,
                                                         int Vp_local) {
    return traced(kernel_kind::elementwise, "cross_entropy_forward_backward", [&] {
        return inner_->cross_entropy_forward_backward(losses, logsumexp, dlogits, logits, targets, dlosses, N, valid,
                                                      Vp_local);
    });
}

void TracingBackend::adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n,
                                  AdamWStep const& step, bfloat16* param_bf16) {
    return traced(kernel_kind::optimizer, "adamw_update",
                  [&] { return inner_->adamw_update(param, grad, m, v, n, step, param_bf16); });
}

double TracingBackend::sum_of_squares(float const* x, std::int64_t n) {
    return traced(kernel_kind::optimizer, "sum_of_squares", [&] { return inner_->sum_of_squares(x, n); });
}

}  // namespace axonn
