// The types the Backend interface and its implementations share: what a kernel is told, nothing about how a
// device runs it.
#pragma once

#include "axonn/core/bfloat16.h"
#include "axonn/core/tensor.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace axonn {

// How a backward writes a weight gradient: added to what the buffer holds, or replacing it. A step's first
// backward overwrites, which spares zeroing the largest gradient buffers and re-reading them in the GEMM.
enum class GradWrite { accumulate, overwrite };

// One AdamW step's constants for a range of parameters.
struct AdamWStep {
    float learning_rate;
    float beta1;
    float beta2;
    float eps;
    float weight_decay;  // 0 for tensors that are not decayed (biases, LayerNorm, ...)
    float grad_scale;    // the clipping coefficient, folded in so the gradients are read once
    int step;            // 1-based, for bias correction
};

// What every element's update shares, as torch computes it: p ← p·(1 − lr·wd), then
// p ← p − (lr / bc1) · m / (sqrt(v) / sqrt(bc2) + eps), with bc = 1 − β^step.
struct AdamWFactors {
    float decay_factor;      // 1 − lr·wd
    float step_size;         // lr / bc1
    float inverse_sqrt_bc2;  // 1 / sqrt(bc2)
};
inline AdamWFactors adamw_factors(AdamWStep const& step) {
    float const bias_correction1 = 1.0f - std::pow(step.beta1, static_cast<float>(step.step));
    float const bias_correction2 = 1.0f - std::pow(step.beta2, static_cast<float>(step.step));
    return {1.0f - step.learning_rate * step.weight_decay, step.learning_rate / bias_correction1,
            1.0f / std::sqrt(bias_correction2)};
}

// The rate a backend's GEMMs reach on a large square product in its precision, measured: MFU's denominator.
struct GemmRateMeasurement {
    double flops_per_s;
    bool per_core;         // a CPU's is one core's: the caller multiplies by the cores it runs on
    std::string hardware;  // what ran it: the CPU's vector instructions, or the GPU's name
};

// One GEMM shape a backend timed more than one way (GEMM layout tuning), as reports show it.
struct GemmTuningReport {
    std::string gemm;                    // "fp32 NN 256x3072x768": the inputs' type, op(A) op(B), M x N x K
    double flops;                        // 2·M·N·K
    double whole_s, chunks_s, padded_s, halves_s;  // each way's best time; 0 for a way that was not a candidate
    std::string chosen;                            // "whole", "chunked", "padded" or "halves"
};

// The device a backend computes on, for the collectives over its memory: none for a host backend; for CUDA the
// GPU's ordinal and the stream the backend queues its work on (a cudaStream_t).
struct DeviceContext {
    int device = -1;
    void* stream = nullptr;
};

// A weight operand of a GEMM: the model's weights in the precision its GEMMs take (fp32, or bf16 in mixed
// precision), read-only.
struct WeightView {
    void const* data = nullptr;
    DType dtype = DType::f32;

    float const* f32() const { return static_cast<float const*>(data); }
    bfloat16 const* bf16() const { return static_cast<bfloat16 const*>(data); }
};

// The width of a token's [q | k | v]: C query channels, and NKV key and value heads of C/NH channels each.
inline std::int64_t qkv_width(int C, int NH, int NKV) { return C + 2 * static_cast<std::int64_t>(NKV) * (C / NH); }

// An fp32 activation as GEMMs read it: `values`, and for bf16 GEMMs `rounded`, a bf16 copy that Backend::gemm_input
// made once for every GEMM that reads it (a Linear's dout feeds both dX and dW). Without a copy (null), a bf16
// GEMM rounds `values` where it runs. An activation held only in bf16 (OperandOut) has no `values`: only bf16
// GEMMs read it. An fp32 buffer converts to a GemmInput of its values.
struct GemmInput {
    float const* values = nullptr;
    bfloat16 const* rounded = nullptr;

    GemmInput() = default;
    GemmInput(float const* values_, bfloat16 const* rounded_ = nullptr)  // NOLINT(google-explicit-constructor)
        : values(values_), rounded(rounded_) {}
    static GemmInput unrounded(float const* values) { return {values, nullptr}; }
    // Rows first ... of an input of `width` columns.
    GemmInput rows_from(std::int64_t first, std::int64_t width) const {
        return {values == nullptr ? nullptr : values + first * width,
                rounded == nullptr ? nullptr : rounded + first * width};
    }
};

// Where a kernel writes an activation that only GEMMs read (a norm's output, the MLP's activation): fp32 `values`,
// or in mixed precision only `rounded`, its bf16 rounding, which is what a bf16 GEMM would round the fp32 values
// to: the same GEMMs, bitwise, for half the memory. Exactly one is set; a buffer of either type converts to one.
struct OperandOut {
    float* values = nullptr;
    bfloat16* rounded = nullptr;

    OperandOut(float* values_) : values(values_) {}        // NOLINT(google-explicit-constructor)
    OperandOut(bfloat16* rounded_) : rounded(rounded_) {}  // NOLINT(google-explicit-constructor)
    GemmInput as_input() const { return {values, rounded}; }
    // write(pointer) with the buffer that is set, float* or bfloat16*: for kernels of either output type.
    template <typename Write> void visit(Write&& write) const {
        if (rounded != nullptr) {
            write(rounded);
        } else {
            write(values);
        }
    }
};

// An activation a kernel reads as it is held: fp32 `values`, or in mixed precision only `rounded`, its bf16 rounding
// (an activation kept as its rounding, which GEMMs and this kernel read). Exactly one is set; the kernel widens a
// rounding as it reads it, exactly, so both give what the fp32 kernel computes on the rounding's values.
struct HeldInput {
    float const* values = nullptr;
    bfloat16 const* rounded = nullptr;

    HeldInput(float const* values_) : values(values_) {}        // NOLINT(google-explicit-constructor)
    HeldInput(bfloat16 const* rounded_) : rounded(rounded_) {}  // NOLINT(google-explicit-constructor)
    // read(pointer) with the buffer that is set, float const* or bfloat16 const*.
    template <typename Read> void visit(Read&& read) const {
        if (rounded != nullptr) {
            read(rounded);
        } else {
            read(values);
        }
    }
};

}  // namespace axonn
