#include "axonn/kernels/cpu/gemm.h"

#include "axonn/core/error.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <map>
#include <new>
#include <tuple>
#include <utility>
#include <vector>

namespace axonn::cpu {

void require_onednn_success(int status, std::string_view call, std::int64_t M, std::int64_t N, std::int64_t K) {
    if (status == dnnl_out_of_memory) throw std::bad_alloc();
    AXONN_INVARIANT(status == dnnl_success, "oneDNN {} failed (status {}) for M={} N={} K={}", call, status, M, N, K);
}

namespace {

// Columns of C per thread below which oneDNN's own threading is kept.
constexpr std::int64_t min_columns_per_thread = 128;

// The threads that split a product's columns between them, each running the library's single-threaded kernel on
// its own block; 1 where oneDNN threads the product itself. On two cores of an Intel Xeon, at GPT-2 small's
// shapes for 256 rows: the activations' products (A not transposed: the forward's and dX's, whose M is a batch's
// rows, cut into chunks) ran 1.9-2.0x one core's on their own blocks, against 1.6-1.9x under oneDNN's threads; the
// weight gradients' (A transposed, N the narrow input width) ran slower split this way than under oneDNN's
// threads, so they stay with oneDNN (docs/PERFORMANCE.md, "Two threads").
int column_threads(bool transpose_a, std::int64_t N) {
    if (transpose_a || omp_in_parallel()) return 1;
    return static_cast<int>(std::clamp<std::int64_t>(N / min_columns_per_thread, 1, omp_get_max_threads()));
}

// Columns per AVX-512 vector of floats: the blocks' width unit, so that no thread's block starts inside a vector.
constexpr std::int64_t vector_columns = 16;

// First column of thread t's block of N: the blocks are whole vectors but the last.
std::int64_t first_column(int t, int threads, std::int64_t N) {
    std::int64_t const vectors = (N + vector_columns - 1) / vector_columns;
    return std::min(N, vectors * t / threads * vector_columns);
}

// B's rows copied into this thread's scratch at a row stride kPaddedRowFloats longer than the rows (see
// gemm_tuning.h, padded_b); returns the copy and its row stride.
std::pair<float const*, std::int64_t> padded_copy(float const* B, std::int64_t rows, std::int64_t columns,
                                                  std::int64_t ldb) {
    thread_local std::vector<float> scratch;
    std::int64_t const ld = columns + kPaddedRowFloats;
    if (scratch.size() < static_cast<std::size_t>(rows * ld)) scratch.resize(static_cast<std::size_t>(rows * ld));
    float* copy = scratch.data();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
        std::copy_n(B + r * ldb, columns, copy + r * ld);
    }
    return {copy, ld};
}

// The rows × columns block of `values` (row stride ld) widened to fp32 in `copy`, rows packed; returns the copy and
// its row stride.
std::pair<float const*, std::int64_t> widened(bfloat16 const* values, std::int64_t rows, std::int64_t columns,
                                              std::int64_t ld, std::vector<float>& copy) {
    if (copy.size() < static_cast<std::size_t>(rows * columns)) copy.resize(static_cast<std::size_t>(rows * columns));
    float* wide = copy.data();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
        for (std::int64_t c = 0; c < columns; ++c) wide[r * columns + c] = to_float(values[r * ld + c]);
    }
    return {copy.data(), columns};
}

// C, where the tuning of a product may time its ways into C itself: the call overwrites C (beta 0) and C is dense
// [M,N] (row stride N); else null (gemm_tuning.h).
float* overwritten_output(float beta, float* C, std::int64_t ldc, std::int64_t N) {
    return beta == 0.0f && ldc == N ? C : nullptr;
}

// The bf16 GEMM: oneDNN's matmul primitive (bf16 inputs, fp32 accumulation and output).
using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

dnnl::engine& cpu_engine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// A matmul primitive per shape, strides and beta: creating one costs far more than running it, and a model uses
// a handful of shapes. Each thread keeps its own: a oneDNN primitive may not run on two threads at once, and unless
// the library is built for concurrent execution (DNNL_ENABLE_CONCURRENT_EXEC, off by default) it must run on the
// thread that created it. bf16 attention calls these products from every thread of its parallel loop; with one
// cache for all threads, its results on two threads were wrong.
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

// One oneDNN matmul over the whole inner dimension.
void gemm_bf16_whole(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
                     bfloat16 const* A, std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C,
                     std::int64_t ldc) {
    thread_local std::map<GemmKey, GemmPlan> plans;
    GemmKey const key{transpose_a, transpose_b, M, N, K, lda, ldb, ldc, beta == 1.0f};
    try {
        auto found = plans.find(key);
        if (found == plans.end()) found = plans.emplace(key, make_plan(key)).first;
        GemmPlan const* plan = &found->second;
        dnnl::stream stream(cpu_engine());
        dnnl::memory const a(plan->a, cpu_engine(), const_cast<bfloat16*>(A));
        dnnl::memory const b(plan->b, cpu_engine(), const_cast<bfloat16*>(B));
        dnnl::memory const c(plan->c, cpu_engine(), C);
        plan->matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        stream.wait();
    } catch (dnnl::error const& e) {
        require_onednn_success(e.status, "bf16 matmul", M, N, K);
    }
}

}  // namespace

void gemm_way(GemmVariant way, bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
              float alpha, float const* A, std::int64_t lda, float const* B, std::int64_t ldb, float beta, float* C,
              std::int64_t ldc) {
    if (way == GemmVariant::padded_b) {
        std::tie(B, ldb) = padded_copy(B, transpose_b ? N : K, transpose_b ? K : N, ldb);
    }
    int const threads = column_threads(transpose_a, N);
    // Columns c0 ... c1−1 of the product over inner indices k0 ... k0+k−1, split over `threads`.
    auto part = [&](std::int64_t k0, std::int64_t k, std::int64_t c0, std::int64_t c1, float part_beta) {
        float const* a = inner_slice_a(A, lda, transpose_a, k0);
        float const* b = inner_slice_b(B, ldb, transpose_b, k0);
        // Columns j0 ... j1−1; inside any parallel region, even a team of one, oneDNN runs on one thread.
        auto columns = [&](std::int64_t j0, std::int64_t j1) -> int {
            return dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', M, j1 - j0, k, alpha, a, lda,
                              column_slice_b(b, ldb, transpose_b, j0), ldb, part_beta, C + j0, ldc);
        };
        int status = dnnl_success;  // the worst of the blocks' (dnnl_success is 0, failures positive)
        if (threads == 1) {
            status = columns(c0, c1);
        } else {
#pragma omp parallel num_threads(threads) reduction(max : status)
            {
                int const t = omp_get_thread_num();
                std::int64_t const j0 = c0 + first_column(t, threads, c1 - c0);
                std::int64_t const j1 = c0 + first_column(t + 1, threads, c1 - c0);
                if (j1 > j0) status = columns(j0, j1);
            }
        }
        require_onednn_success(status, "sgemm", M, c1 - c0, k);
    };
    run_gemm_variant(way, N, K, beta, part);
}

template <>
void gemm<float>(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                 float const* A, std::int64_t lda, float const* B, std::int64_t ldb, float beta, float* C,
                 std::int64_t ldc) {
    GemmVariant const variant =
        gemm_variant({false, transpose_a, transpose_b, M, N, K}, overwritten_output(beta, C, ldc, N),
                     [&](GemmVariant way, float* out) {
                         gemm_way(way, transpose_a, transpose_b, M, N, K, alpha, A, lda, B, ldb, 0.0f, out, N);
                     });
    gemm_way(variant, transpose_a, transpose_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <>
void gemm<double>(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, double alpha,
                  double const* A, std::int64_t lda, double const* B, std::int64_t ldb, double beta, double* C,
                  std::int64_t ldc) {
    for (std::int64_t i = 0; i < M; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
            double sum = 0.0;
            for (std::int64_t k = 0; k < K; ++k) {
                double const a = transpose_a ? A[k * lda + i] : A[i * lda + k];
                double const b = transpose_b ? B[j * ldb + k] : B[k * ldb + j];
                sum += a * b;
            }
            C[i * ldc + j] = alpha * sum + (beta == 0.0 ? 0.0 : beta * C[i * ldc + j]);
        }
    }
}

char const* gemm_library_name() {
    dnnl_version_t const* version = dnnl_version();
    static std::string const name = fmt::format("oneDNN {}.{}.{} ({})", version->major, version->minor, version->patch,
                                                version->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "sequential");
    return name.c_str();
}

void gemm_bf16(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, bfloat16 const* A,
               std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
    AXONN_INVARIANT(beta == 0.0f || beta == 1.0f, "gemm_bf16 takes beta 0 or 1, not {}", beta);
    if (!bf16_gemm_support().native) {
        gemm_bf16_emulated(transpose_a, transpose_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    GemmVariant const variant =
        gemm_variant({true, transpose_a, transpose_b, M, N, K}, overwritten_output(beta, C, ldc, N),
                     [&](GemmVariant way, float* out) {
                         gemm_bf16_way(way, transpose_a, transpose_b, M, N, K, A, lda, B, ldb, 0.0f, out, N);
                     });
    gemm_bf16_way(variant, transpose_a, transpose_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16_way(GemmVariant way, bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N,
                   std::int64_t K, bfloat16 const* A, std::int64_t lda, bfloat16 const* B, std::int64_t ldb,
                   float beta, float* C, std::int64_t ldc) {
    auto const product = bf16_gemm_support().native ? gemm_bf16_whole : gemm_bf16_emulated;
    // Columns j0 ... j1−1 of the product over inner indices k0 ... k0+k−1.
    auto part = [&](std::int64_t k0, std::int64_t k, std::int64_t j0, std::int64_t j1, float part_beta) {
        bfloat16 const* b = column_slice_b(inner_slice_b(B, ldb, transpose_b, k0), ldb, transpose_b, j0);
        product(transpose_a, transpose_b, M, j1 - j0, k, inner_slice_a(A, lda, transpose_a, k0), lda, b, ldb,
                part_beta, C + j0, ldc);
    };
    run_gemm_variant(way, N, K, beta, part);
}

void gemm_bf16_emulated(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        bfloat16 const* A, std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C,
                        std::int64_t ldc) {
    // Each calling thread has its own copies: attention calls this from inside its parallel loops.
    thread_local std::vector<float> a_wide, b_wide;
    auto const [a, ld_a] = widened(A, transpose_a ? K : M, transpose_a ? M : K, lda, a_wide);
    auto const [b, ld_b] = widened(B, transpose_b ? N : K, transpose_b ? K : N, ldb, b_wide);
    gemm<float>(transpose_a, transpose_b, M, N, K, 1.0f, a, ld_a, b, ld_b, beta, C, ldc);
}

namespace {

Bf16Support probe_bf16_gemm() {
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

}  // namespace

Bf16Support bf16_gemm_support() {
    static Bf16Support const support = probe_bf16_gemm();
    return support;
}

// The Linear layer.
namespace {

// out[M,N] += bias[N] (if not null)
template <typename T>
void add_bias(T* out, T const* bias, std::int64_t M, std::int64_t N) {
    if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
    for (std::int64_t m = 0; m < M; ++m) {
#pragma omp simd
        for (std::int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
    }
}

// dbias[N] += Σ_m dout[m,:] (if not null)
template <typename T>
void accumulate_bias_gradient(T* dbias, T const* dout, std::int64_t M, std::int64_t N) {
    if (dbias == nullptr) return;
    for (std::int64_t m = 0; m < M; ++m) {
#pragma omp simd
        for (std::int64_t n = 0; n < N; ++n) dbias[n] += dout[m * N + n];
    }
}

float beta_of(GradWrite write) { return write == GradWrite::accumulate ? 1.0f : 0.0f; }

}  // namespace

template <typename T>
void linear_forward(T* out, T const* inp, T const* weight, T const* bias, std::int64_t M, std::int64_t K,
                    std::int64_t N) {
    gemm<T>(false, true, M, N, K, T(1), inp, K, weight, K, T(0), out, N);
    add_bias(out, bias, M, N);
}

template <typename T>
void linear_backward_input(T* dinp, T const* dout, T const* weight, std::int64_t M, std::int64_t K, std::int64_t N) {
    gemm<T>(false, false, M, K, N, T(1), dout, N, weight, K, T(0), dinp, K);
}

template <typename T>
void linear_backward_weight(T* dweight, T* dbias, T const* dout, T const* inp, std::int64_t M, std::int64_t K,
                            std::int64_t N, GradWrite dweight_write) {
    gemm<T>(true, false, N, K, M, T(1), dout, N, inp, K, T(beta_of(dweight_write)), dweight, K);
    accumulate_bias_gradient(dbias, dout, M, N);
}

void linear_forward(float* out, bfloat16 const* inp, bfloat16 const* weight, float const* bias, std::int64_t M,
                    std::int64_t K, std::int64_t N) {
    gemm_bf16(false, true, M, N, K, inp, K, weight, K, 0.0f, out, N);
    add_bias(out, bias, M, N);
}

void linear_backward_input(float* dinp, bfloat16 const* dout, bfloat16 const* weight, std::int64_t M, std::int64_t K,
                           std::int64_t N) {
    gemm_bf16(false, false, M, K, N, dout, N, weight, K, 0.0f, dinp, K);
}

void linear_backward_weight(float* dweight, float* dbias, bfloat16 const* dout, float const* dout_f32,
                            bfloat16 const* inp, std::int64_t M, std::int64_t K, std::int64_t N,
                            GradWrite dweight_write) {
    gemm_bf16(true, false, N, K, M, dout, N, inp, K, beta_of(dweight_write), dweight, K);
    accumulate_bias_gradient(dbias, dout_f32, M, N);
}

template void linear_forward<float>(float*, float const*, float const*, float const*, std::int64_t, std::int64_t,
                                    std::int64_t);
template void linear_forward<double>(double*, double const*, double const*, double const*, std::int64_t, std::int64_t,
                                     std::int64_t);
template void linear_backward_input<float>(float*, float const*, float const*, std::int64_t, std::int64_t,
                                           std::int64_t);
template void linear_backward_input<double>(double*, double const*, double const*, std::int64_t, std::int64_t,
                                            std::int64_t);
template void linear_backward_weight<float>(float*, float*, float const*, float const*, std::int64_t, std::int64_t,
                                            std::int64_t, GradWrite);
template void linear_backward_weight<double>(double*, double*, double const*, double const*, std::int64_t,
                                             std::int64_t, std::int64_t, GradWrite);

}  // namespace axonn::cpu
