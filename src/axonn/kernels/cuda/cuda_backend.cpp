#include "axonn/kernels/cuda/cuda_backend.h"

#include "axonn/core/error.h"
#include "axonn/core/cuda/cuda_check.h"
#include "axonn/kernels/cuda/gemm_rate.h"
#include "axonn/kernels/cuda/kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace axonn {
namespace {

// Device tensors (core/tensor.h) through plain cudaMalloc on the current device, which the backend selected.
void* allocate_device(std::size_t bytes) {
    void* pointer = nullptr;
    if (cudaMalloc(&pointer, bytes) == cudaSuccess) return pointer;
    cudaGetLastError();  // the caller reports it; a later launch's check must not find it
    return nullptr;
}
// A new tensor's zeros must be there before the compute stream, which does not wait for the default one, reads it.
void zero_device(void* pointer, std::size_t bytes) {
    cuda::check(cudaMemset(pointer, 0, bytes), "zero GPU memory");
    cuda::check(cudaDeviceSynchronize(), "zero GPU memory");
}
void release_device(void* pointer) { cudaFree(pointer); }

__nv_bfloat16* as_device_bf16(void* p) { return static_cast<__nv_bfloat16*>(p); }
__nv_bfloat16 const* as_device_bf16(void const* p) { return static_cast<__nv_bfloat16 const*>(p); }
// A kernel's output as the CUDA kernels take it.
float* device_output(float* p) { return p; }
__nv_bfloat16* device_output(bfloat16* p) { return as_device_bf16(p); }
float const* device_input(float const* p) { return p; }
__nv_bfloat16 const* device_input(bfloat16 const* p) { return as_device_bf16(p); }

}  // namespace

CudaBackend::CudaBackend(DType gemm_dtype, int device) : gemm_dtype_(gemm_dtype), device_(device) {
    AXONN_INVARIANT(gemm_dtype == DType::f32 || gemm_dtype == DType::bf16,
                    "the CUDA backend's GEMMs take f32 or bf16, not {}", dtype_name(gemm_dtype));
    cuda::check(cudaSetDevice(device), "select the GPU");
    cudaDeviceProp properties{};
    cuda::check(cudaGetDeviceProperties(&properties, device), "read the GPU's properties");
    AXONN_REQUIRE(properties.major >= 8,
                  "GPU {} ({}) has compute capability {}.{}: the CUDA backend needs 8.0 (Ampere) or newer", device,
                  properties.name, properties.major, properties.minor);
    device_name_ = properties.name;
    cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "create the compute stream");
    gemm_ = std::make_unique<cuda::Gemm>();
    // The stream-ordered allocations of each step (column sums' partials) keep their memory between steps
    // instead of returning it to the driver at every synchronisation.
    cudaMemPool_t pool = nullptr;
    cuda::check(cudaDeviceGetDefaultMemPool(&pool, device), "find the GPU's memory pool");
    std::uint64_t keep_all = ~std::uint64_t{0};
    cuda::check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "keep the pool's memory");
    set_device_allocator({allocate_device, zero_device, release_device});
    norm_partials_ = Tensor({cuda::sum_of_squares_blocks}, DType::f64, Memory::device);
}

CudaBackend::~CudaBackend() {
    if (stream_ == nullptr) return;
    // The last kernels finish before their stream goes; an error of theirs can no longer be reported here.
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
}

void CudaBackend::synchronize() { cuda::check(cudaStreamSynchronize(stream_), "finish the queued GPU work"); }

std::string CudaBackend::name() const {
    return fmt::format("cuda, {} GEMMs (cuBLASLt on {}, device {})", precision_name(gemm_dtype_), device_name_,
                       device_);
}

void CudaBackend::set_gemm_tuning(bool on) { gemm_->set_tuning(on); }

GemmRateMeasurement CudaBackend::measure_gemm_rate() {
    return {cuda::measure_gemm_rate(gemm_dtype_).flops_per_s, false, device_name_};
}

void CudaBackend::zero(void* x, std::int64_t bytes) {
    cuda::check(cudaMemsetAsync(x, 0, static_cast<std::size_t>(bytes), stream_), "zero GPU memory");
}
void CudaBackend::copy_to_host(void* host, void const* x, std::int64_t bytes) {
    cuda::check(cudaMemcpyAsync(host, x, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
                "copy from the GPU");
    synchronize();
}
void CudaBackend::copy_from_host(void* x, void const* host, std::int64_t bytes) {
    cuda::check(cudaMemcpyAsync(x, host, static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice, stream_),
                "copy to the GPU");
    // From pageable memory CUDA may still be reading the host buffer after the call returns: wait, so that the
    // caller may reuse it.
    synchronize();
}

void CudaBackend::convert(void* out, DType out_dtype, void const* in, DType in_dtype, std::int64_t n) {
    if (out_dtype == in_dtype) {
        cuda::check(cudaMemcpyAsync(out, in, static_cast<std::size_t>(n) * dtype_size(in_dtype),
                                    cudaMemcpyDeviceToDevice, stream_),
                    "copy on the GPU");
    } else if (out_dtype == DType::bf16 && in_dtype == DType::f32) {
        cuda::to_bf16(as_device_bf16(out), static_cast<float const*>(in), n, stream_);
    } else if (out_dtype == DType::f32 && in_dtype == DType::bf16) {
        cuda::to_f32(static_cast<float*>(out), as_device_bf16(in), n, stream_);
    } else {
        AXONN_INVARIANT(false, "no conversion from {} to {}", dtype_name(in_dtype), dtype_name(out_dtype));
    }
}

void const* CudaBackend::gemm_operand(Scratch slot, float const* values, std::int64_t n) {
    if (gemm_dtype_ == DType::f32) return values;
    Tensor& scratch = scratch_[slot];
    grow_to(scratch, n, DType::bf16, Memory::device);
    cuda::to_bf16(as_device_bf16(scratch.raw_data()), values, n, stream_);
    return scratch.raw_data();
}

void const* CudaBackend::gemm_operand(Scratch slot, GemmInput x, std::int64_t n) {
    if (gemm_dtype_ == DType::bf16 && x.rounded != nullptr) return x.rounded;
    AXONN_INVARIANT(x.values != nullptr, "an fp32 GEMM got an operand held only in bf16");
    return gemm_operand(slot, x.values, n);
}

OperandOut CudaBackend::held_operand_out(float* values, std::int64_t n) {
    if (gemm_dtype_ != DType::bf16) return values;
    grow_to(scratch_[held_input], n, DType::bf16, Memory::device);
    return static_cast<bfloat16*>(scratch_[held_input].raw_data());
}

GemmInput CudaBackend::gemm_input(float const* x, std::int64_t n) {
    if (gemm_dtype_ != DType::bf16) return GemmInput::unrounded(x);
    return {x, static_cast<bfloat16 const*>(gemm_operand(held_input, x, n))};
}

void CudaBackend::check_weight(WeightView weight) const {
    AXONN_INVARIANT(weight.dtype == gemm_dtype_, "a {} GEMM got {} weights", dtype_name(gemm_dtype_),
                    dtype_name(weight.dtype));
}

void CudaBackend::encoder_forward(float* out, std::int32_t const* tokens, WeightView wte, float const* wpe, int B,
                                  int T, int C, int vocab_begin, int vocab_rows) {
    if (wte.dtype == DType::bf16) {
        cuda::encoder_forward(out, tokens, as_device_bf16(wte.data), wpe, B, T, C, vocab_begin, vocab_rows, stream_);
    } else {
        cuda::encoder_forward(out, tokens, wte.f32(), wpe, B, T, C, vocab_begin, vocab_rows, stream_);
    }
}
void CudaBackend::encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B,
                                   int T, int C, int vocab_begin, int vocab_rows) {
    cuda::encoder_backward(dwte, dwpe, dout, tokens, B, T, C, vocab_begin, vocab_rows, stream_);
}

void CudaBackend::layernorm_statistics(double* stats, float const* inp, std::int64_t N, int C) {
    cuda::layernorm_statistics(stats, inp, N, C, stream_);
}
void CudaBackend::layernorm_forward(OperandOut out, float* mean, float* rstd, float const* inp, float const* weight,
                                    float const* bias, double const* stats, std::int64_t N, int C, int C_total) {
    out.visit([&](auto* y) {
        cuda::layernorm_forward(device_output(y), mean, rstd, inp, weight, bias, stats, N, C, C_total, stream_);
    });
}
void CudaBackend::layernorm_backward_statistics(double* stats, float const* dout, float const* inp,
                                                float const* weight, float const* mean, float const* rstd,
                                                std::int64_t N, int C) {
    cuda::layernorm_backward_statistics(stats, dout, inp, weight, mean, rstd, N, C, stream_);
}
void CudaBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, float const* dout, float const* inp,
                                     float const* weight, float const* mean, float const* rstd, double const* stats,
                                     std::int64_t N, int C, int C_total) {
    cuda::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, stats, N, C, C_total, stream_);
}
void CudaBackend::rmsnorm_statistics(double* stats, float const* inp, std::int64_t N, int C) {
    cuda::rmsnorm_statistics(stats, inp, N, C, stream_);
}
void CudaBackend::rmsnorm_forward(OperandOut out, float* rstd, float const* inp, float const* weight,
                                  double const* stats, std::int64_t N, int C, int C_total, double eps) {
    out.visit([&](auto* y) {
        cuda::rmsnorm_forward(device_output(y), rstd, inp, weight, stats, N, C, C_total, eps, stream_);
    });
}
void CudaBackend::rmsnorm_backward_statistics(double* stats, float const* dout, float const* inp, float const* weight,
                                              float const* rstd, std::int64_t N, int C) {
    cuda::rmsnorm_backward_statistics(stats, dout, inp, weight, rstd, N, C, stream_);
}
void CudaBackend::rmsnorm_backward(float* dinp, float* dweight, float const* dout, float const* inp,
                                   float const* weight, float const* rstd, double const* stats, std::int64_t N, int C,
                                   int C_total) {
    cuda::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, stats, N, C, C_total, stream_);
}

void CudaBackend::linear_forward(float* out, GemmInput inp, WeightView weight, float const* bias, std::int64_t M,
                                 std::int64_t K, std::int64_t N) {
    check_weight(weight);
    bool const bf16 = gemm_dtype_ == DType::bf16;
    gemm_->run(false, true, M, N, K, gemm_operand(first_operand, inp, M * K), K, weight.data, K, 0.0f, out, N, bf16,
               stream_);
    cuda::add_bias(out, bias, M, N, stream_);
}
void CudaBackend::linear_backward_input(float* dinp, GemmInput dout, WeightView weight, std::int64_t M,
                                        std::int64_t K, std::int64_t N) {
    check_weight(weight);
    bool const bf16 = gemm_dtype_ == DType::bf16;
    gemm_->run(false, false, M, K, N, gemm_operand(first_operand, dout, M * N), N, weight.data, K, 0.0f, dinp, K, bf16,
               stream_);
}
void CudaBackend::linear_backward_weight(float* dweight, float* dbias, GemmInput dout, GemmInput inp,
                                         std::int64_t M, std::int64_t K, std::int64_t N, GradWrite dweight_write) {
    bool const bf16 = gemm_dtype_ == DType::bf16;
    float const beta = dweight_write == GradWrite::accumulate ? 1.0f : 0.0f;
    gemm_->run(true, false, N, K, M, gemm_operand(first_operand, dout, M * N), N,
               gemm_operand(second_operand, inp, M * K), K, beta, dweight, K, bf16, stream_);
    cuda::accumulate_bias_gradient(dbias, dout.values, M, N, stream_);
}

bool CudaBackend::on_tensor_cores(int C, int NH) const {
    return gemm_dtype_ == DType::bf16 && cuda::tensor_core_attention_fits(C / NH);
}

float const* CudaBackend::attention_qkv(GemmInput qkv, std::int64_t n) {
    if (qkv.values != nullptr) return qkv.values;
    // Held only in bf16: widened, exactly, so that the kernels' own rounding of it gives it back.
    grow_to(widened_qkv_, n, DType::f32, Memory::device);
    cuda::to_f32(widened_qkv_.data<float>(), as_device_bf16(qkv.rounded), n, stream_);
    return widened_qkv_.data<float>();
}

void CudaBackend::attention_forward(float* out, float* lse, GemmInput qkv_input, int B, int T, int C, int NH,
                                    int NKV) {
    float const* qkv = attention_qkv(qkv_input, static_cast<std::int64_t>(B) * T * qkv_width(C, NH, NKV));
    if (on_tensor_cores(C, NH)) {
        cuda::attention_forward_tensor_cores(out, lse, qkv, B, T, C, NH, NKV, stream_);
    } else {
        cuda::attention_forward(out, lse, qkv, B, T, C, NH, NKV, stream_);
    }
}
void CudaBackend::attention_backward(float* dqkv, float const* dout, GemmInput qkv_input, float const* out,
                                     float const* lse, int B, int T, int C, int NH, int NKV) {
    float const* qkv = attention_qkv(qkv_input, static_cast<std::int64_t>(B) * T * qkv_width(C, NH, NKV));
    grow_to(row_dot_, static_cast<std::int64_t>(B) * NH * T, DType::f32, Memory::device);
    if (on_tensor_cores(C, NH)) {
        cuda::attention_backward_tensor_cores(dqkv, dout, qkv, out, lse, row_dot_.data<float>(), B, T, C, NH, NKV,
                                              stream_);
    } else {
        cuda::attention_backward(dqkv, dout, qkv, out, lse, row_dot_.data<float>(), B, T, C, NH, NKV, stream_);
    }
}
void CudaBackend::attention_cached(float* out, float* lse, float* k_cache, float* v_cache, float const* qkv, int B,
                                   int n, int past, int capacity, int C, int NH, int NKV) {
    cuda::kv_cache_append(k_cache, v_cache, qkv, B, n, past, capacity, C, NH, NKV, stream_);
    // A prompt's first tokens see no cache: the fused kernel computes them as a training forward does.
    if (past == 0) {
        attention_forward(out, lse, GemmInput(qkv), B, n, C, NH, NKV);
    } else {
        cuda::attention_over_cache(out, qkv, k_cache, v_cache, B, n, past, capacity, C, NH, NKV, stream_);
    }
}

void CudaBackend::bias_gelu_forward(OperandOut out, float* pre, float const* bias, std::int64_t N, int F,
                                    bfloat16* kept_pre) {
    out.visit([&](auto* y) {
        if (kept_pre != nullptr) {
            cuda::bias_gelu_forward(device_output(y), as_device_bf16(kept_pre), pre, bias, N, F, stream_);
        } else {
            cuda::bias_gelu_forward(device_output(y), pre, pre, bias, N, F, stream_);
        }
    });
}
GemmInput CudaBackend::gelu_bias_backward(float* dpre, float* dbias, HeldInput pre, float const* dout,
                                          std::int64_t N, int F) {
    OperandOut const out = held_operand_out(dpre, N * F);
    out.visit([&](auto* y) {
        pre.visit([&](auto const* u) { cuda::gelu_bias_backward(device_output(y), dbias, device_input(u), dout, N, F,
                                                                stream_); });
    });
    return out.as_input();
}
void CudaBackend::swiglu_forward(OperandOut out, float const* inp, std::int64_t N, int F) {
    out.visit([&](auto* y) { cuda::swiglu_forward(device_output(y), inp, N, F, stream_); });
}
void CudaBackend::swiglu_backward(float* dinp, HeldInput inp, float const* dout, std::int64_t N, int F) {
    inp.visit([&](auto const* x) { cuda::swiglu_backward(dinp, device_input(x), dout, N, F, stream_); });
}
void CudaBackend::rope_rotate(float* x, double const* inv_freq, int B, int T, int heads, int head_size,
                              std::int64_t stride, int first_position, int direction) {
    // A model's frequencies never change: copied once (and again only if another set comes), synchronously, so
    // that the caller's array may go as soon as this returns.
    std::span<double const> const frequencies(inv_freq, static_cast<std::size_t>(head_size / 2));
    if (!std::ranges::equal(frequencies, inv_freq_host_)) {
        synchronize();  // kernels queued earlier may still read the old copy
        grow_to(inv_freq_, static_cast<std::int64_t>(frequencies.size()), DType::f64, Memory::device);
        inv_freq_host_.assign(frequencies.begin(), frequencies.end());
        cuda::check(cudaMemcpyAsync(inv_freq_.raw_data(), inv_freq_host_.data(), frequencies.size_bytes(),
                                    cudaMemcpyHostToDevice, stream_),
                    "copy the rotary frequencies to the GPU");
        synchronize();
    }
    cuda::rope_rotate(x, inv_freq_.data<double>(), B, T, heads, head_size, stride, first_position, direction, stream_);
}
void CudaBackend::split_columns(float* out, float const* in, std::int64_t rows, int parts, int block) {
    cuda::move_column_blocks(out, in, rows, parts, block, true, stream_);
}
void CudaBackend::join_columns(float* out, float const* in, std::int64_t rows, int parts, int block) {
    cuda::move_column_blocks(out, in, rows, parts, block, false, stream_);
}
void CudaBackend::residual_forward(float* out, float const* a, float const* b, std::int64_t n) {
    cuda::residual_forward(out, a, b, n, stream_);
}
void CudaBackend::residual_norm_statistics(float* sum, float const* a, float const* b, double* stats, std::int64_t N,
                                           int C, bool layernorm) {
    cuda::residual_norm_statistics(sum, a, b, stats, N, C, layernorm, stream_);
}

void CudaBackend::cross_entropy_max(float* row_max, float const* logits, std::int64_t N, int valid, int Vp_local) {
    cuda::cross_entropy_max(row_max, logits, N, valid, Vp_local, stream_);
}
void CudaBackend::cross_entropy_sums(double* sums, float const* logits, float const* row_max,
                                     std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                     int vocab_begin) {
    cuda::cross_entropy_sums(sums, logits, row_max, targets, N, valid, Vp_local, vocab_begin, stream_);
}
// The two kernels one after the other: the same arithmetic (a block per row in each); a kernel that kept each row
// in shared memory between the two would save one read of the logits.
void CudaBackend::cross_entropy_max_and_sums(float* row_max, double* sums, float const* logits,
                                             std::int32_t const* targets, std::int64_t N, int valid, int Vp_local,
                                             int vocab_begin) {
    cross_entropy_max(row_max, logits, N, valid, Vp_local);
    cross_entropy_sums(sums, logits, row_max, targets, N, valid, Vp_local, vocab_begin);
}
void CudaBackend::cross_entropy_losses(float* losses, float* logsumexp, float const* row_max, double const* sums,
                                       std::int32_t const* targets, std::int64_t N) {
    cuda::cross_entropy_losses(losses, logsumexp, row_max, sums, targets, N, stream_);
}
GemmInput CudaBackend::cross_entropy_backward(float* dlogits, float const* logits, float const* logsumexp,
                                              std::int32_t const* targets, float const* dlosses, std::int64_t N,
                                              int valid, int Vp_local, int vocab_begin) {
    OperandOut const out = held_operand_out(dlogits, N * Vp_local);
    out.visit([&](auto* y) {
        cuda::cross_entropy_backward(device_output(y), logits, logsumexp, targets, dlosses, N, valid, Vp_local,
                                     vocab_begin, stream_);
    });
    return out.as_input();
}
GemmInput CudaBackend::cross_entropy_forward_backward(float* losses, float* logsumexp, float* dlogits,
                                                      float const* logits, std::int32_t const* targets,
                                                      float const* dlosses, std::int64_t N, int valid, int Vp_local) {
    OperandOut const out = held_operand_out(dlogits, N * Vp_local);
    out.visit([&](auto* y) {
        cuda::cross_entropy_forward_backward(losses, logsumexp, device_output(y), logits, targets, dlosses, N, valid,
                                             Vp_local, stream_);
    });
    return out.as_input();
}

void CudaBackend::adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n,
                               AdamWStep const& step, bfloat16* param_bf16) {
    AdamWFactors const factors = adamw_factors(step);
    cuda::AdamWConstants const constants{step.beta1,         step.beta2,        step.eps,
                                         step.grad_scale,    factors.decay_factor, factors.step_size,
                                         factors.inverse_sqrt_bc2};
    cuda::adamw_update(param, grad, m, v, n, constants, reinterpret_cast<__nv_bfloat16*>(param_bf16), stream_);
}

double CudaBackend::sum_of_squares(float const* x, std::int64_t n) {
    cuda::sum_of_squares_partials(norm_partials_.data<double>(), x, n, stream_);
    std::vector<double> partials(cuda::sum_of_squares_blocks);
    cuda::check(cudaMemcpyAsync(partials.data(), norm_partials_.raw_data(), partials.size() * sizeof(double),
                                cudaMemcpyDeviceToHost, stream_),
                "read the squared norm");
    synchronize();
    double sum = 0;
    for (double const partial : partials) sum += partial;
    return sum;
}

}  // namespace axonn
