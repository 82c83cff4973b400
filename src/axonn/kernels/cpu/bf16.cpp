#include "axonn/kernels/cpu/bf16.h"

#include "axonn/core/error.h"
#include "axonn/kernels/cpu/gemm_tuning.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>

namespace axonn::cpu {
namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

dnnl::engine& cpu_engine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// A matmul primitive per shape, strides and beta: creating one costs far more than running it, and a model uses
// a handful of shapes.
using GemmKey = std::tuple<bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, bool>;

struct GemmPlan {
    dnnl::memory::desc a, b, c;
    dnnl::matmul matmul;
};

GemmPlan make_plan(GemmKey const& key) {
    auto const [transpose_a, transpose_b, M, N, K, lda, ldb, ldc, accumulate] = key;
    // op(A) is [M,K]: stored [M,K] with row stride lda, or [K,M] (then strides are swapped); op(B) likewise.
    dnnl::memory::desc const a({M, K}, dt::bf16, transpose_a ? dims{1, lda} : dims{lda, 1});
    dnnl::memory::desc const b({K, N}, dt::bf16, transpose_b ? dims{1, ldb} : dims{ldb, 1});
    dnnl::memory::desc const c({M, N}, dt::f32, dims{ldc, 1});
    dnnl::primitive_attr attributes;
    if (accumulate) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attributes.set_post_ops(sum);
    }
    dnnl::matmul::primitive_desc const description(dnnl::matmul::desc(a, b, c), attributes, cpu_engine());
    return {a, b, c, dnnl::matmul(description)};
}

template <typename In, typename Out, typename Convert>
void convert_all(Out* out, In const* in, std::int64_t n, Convert&& convert) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = convert(in[i]);
}

// One oneDNN matmul over the whole inner dimension.
void gemm_bf16_whole(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
                     bfloat16 const* A, std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C,
                     std::int64_t ldc) {
    static std::mutex mutex;
    static std::map<GemmKey, GemmPlan> plans;
    GemmKey const key{transpose_a, transpose_b, M, N, K, lda, ldb, ldc, beta == 1.0f};
    GemmPlan const* plan = nullptr;
    {
        std::lock_guard const lock(mutex);
        auto found = plans.find(key);
        if (found == plans.end()) found = plans.emplace(key, make_plan(key)).first;
        plan = &found->second;
    }
    dnnl::stream stream(cpu_engine());
    dnnl::memory const a(plan->a, cpu_engine(), const_cast<bfloat16*>(A));
    dnnl::memory const b(plan->b, cpu_engine(), const_cast<bfloat16*>(B));
    dnnl::memory const c(plan->c, cpu_engine(), C);
    plan->matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
}

}  // namespace

void to_bf16(bfloat16* out, float const* in, std::int64_t n) {
    convert_all(out, in, n, [](float value) { return to_bfloat16(value); });
}

void to_f32(float* out, bfloat16 const* in, std::int64_t n) {
    convert_all(out, in, n, [](bfloat16 value) { return to_float(value); });
}

void gemm_bf16(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, bfloat16 const* A,
               std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
    invariant(beta == 0.0f || beta == 1.0f, "gemm_bf16 takes beta 0 or 1, not {}", beta);
    // The product over inner indices k0 ... k0+k−1 into out (row stride ld_out).
    auto part_into = [&](float* out, std::int64_t ld_out) {
        return [=](std::int64_t k0, std::int64_t k, float part_beta) {
            gemm_bf16_whole(transpose_a, transpose_b, M, N, k, inner_slice_a(A, lda, transpose_a, k0), lda,
                            inner_slice_b(B, ldb, transpose_b, k0), ldb, part_beta, out, ld_out);
        };
    };
    GemmVariant const variant =
        gemm_variant({true, transpose_a, transpose_b, M, N, K}, [&](GemmVariant way, float* scratch) {
            run_gemm_variant(way, K, 0.0f, part_into(scratch, N));
        });
    run_gemm_variant(variant, K, beta, part_into(C, ldc));
}

Bf16Support bf16_gemm_support() {
    if (!__builtin_cpu_supports("avx512bf16")) return {false, "the CPU lacks avx512_bf16"};
    try {
        dnnl::memory::desc const a({256, 256}, dt::bf16, dims{256, 1}), c({256, 256}, dt::f32, dims{256, 1});
        dnnl::matmul::primitive_desc const description(dnnl::matmul::desc(a, a, c), cpu_engine());
        std::string const implementation = description.impl_info_str();
        if (implementation.find("ref") != std::string::npos) {
            return {false, "oneDNN has only its reference bf16 kernel here (" + implementation + ")"};
        }
        return {true, implementation};
    } catch (dnnl::error const& e) {
        return {false, std::string("oneDNN refused a bf16 matmul: ") + e.what()};
    }
}

}  // namespace axonn::cpu
