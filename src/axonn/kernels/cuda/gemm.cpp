#include "axonn/kernels/cuda/gemm.h"

#include "axonn/core/error.h"
#include "axonn/core/cuda/cuda_check.h"
#include "axonn/core/cuda/event.h"

#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace axonn::cuda {

// A row-major C[M,N] is the column-major Cᵀ[N,M], and Cᵀ = op(B)ᵀ · op(A)ᵀ: cuBLASLt multiplies B's column-major
// view by A's, with m = N, n = M, and each operand transposed exactly when the row-major call asked for it.
struct Gemm::Plan {
    cublasLtMatmulDesc_t operation = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A = our B, its B = our A
    cublasLtMatmulAlgo_t algorithm{};

    ~Plan() {
        if (operation) cublasLtMatmulDescDestroy(operation);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
    }
};

namespace {

constexpr std::size_t workspace_size = 32u << 20;  // cuBLASLt's recommendation for Hopper
constexpr int candidates = 8;                      // heuristic proposals timed with tuning on

cudaDataType_t input_type(bool bf16) { return bf16 ? CUDA_R_16BF : CUDA_R_32F; }

// The largest power of two, up to 256, that divides the address.
std::uint32_t alignment_of(void const* pointer) {
    auto const address = reinterpret_cast<std::uintptr_t>(pointer);
    std::uint32_t alignment = 256;
    while (alignment > 1 && address % alignment != 0) alignment /= 2;
    return alignment;
}

void set_preference(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                    std::uint32_t value) {
    check(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value), "set a GEMM preference");
}

}  // namespace

Gemm::Gemm() : workspace_bytes_(workspace_size) {
    check(cublasLtCreate(&handle_), "create a cuBLASLt handle");
    check(cudaMalloc(&workspace_, workspace_bytes_), "allocate the cuBLASLt workspace");
}

Gemm::~Gemm() {
    plans_.clear();  // before the handle they were made with
    if (workspace_) cudaFree(workspace_);
    if (handle_) cublasLtDestroy(handle_);
}

Gemm::Plan& Gemm::plan_for(ShapeKey const& key, void const* A, void const* B, float* C, cudaStream_t stream) {
    auto const found = plans_.find(key);
    if (found != plans_.end()) return *found->second;
    auto const [ta, tb, M, N, K, lda, ldb, ldc, bf16, accumulate, align_a, align_b, align_c] = key;
    auto plan = std::make_unique<Plan>();
    check(cublasLtMatmulDescCreate(&plan->operation, CUBLAS_COMPUTE_32F, CUDA_R_32F), "describe a GEMM");
    cublasOperation_t const op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
          "set a GEMM's transpose");
    check(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
          "set a GEMM's transpose");
    // Column-major shapes as stored: our B is [K,N] (or [N,K] transposed) row-major, i.e. N×K (K×N) column-major.
    check(cublasLtMatrixLayoutCreate(&plan->a, input_type(bf16), tb ? K : N, tb ? N : K, ldb), "lay out a GEMM");
    check(cublasLtMatrixLayoutCreate(&plan->b, input_type(bf16), ta ? M : K, ta ? K : M, lda), "lay out a GEMM");
    check(cublasLtMatrixLayoutCreate(&plan->c, CUDA_R_32F, N, M, ldc), "lay out a GEMM");

    cublasLtMatmulPreference_t preference = nullptr;
    check(cublasLtMatmulPreferenceCreate(&preference), "create a GEMM preference");
    check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes_, sizeof workspace_bytes_),
          "limit a GEMM's workspace");
    set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_b);  // cuBLASLt's A is our B
    set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_a);
    set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c);
    set_preference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c);
    std::vector<cublasLtMatmulHeuristicResult_t> results(candidates);
    int found_count = 0;
    cublasStatus_t const status = cublasLtMatmulAlgoGetHeuristic(handle_, plan->operation, plan->a, plan->b, plan->c,
                                                                 plan->c, preference, tuning_ ? candidates : 1,
                                                                 results.data(), &found_count);
    cublasLtMatmulPreferenceDestroy(preference);
    check(status, "find a GEMM algorithm");
    AXONN_REQUIRE(found_count > 0, "cuBLASLt has no algorithm for a {}×{}×{} GEMM", M, N, K);
    plan->algorithm = results[0].algo;

    // With tuning on, each proposal is timed once on the call's own operands. Only for beta = 0: the product
    // then overwrites C with what the call computes anyway, where beta ≠ 0 would accumulate into it each time.
    if (tuning_ && found_count > 1 && !accumulate) {
        plan->algorithm = fastest(*plan, std::span(results.data(), static_cast<std::size_t>(found_count)), A, B, C,
                                  stream);
    }
    return *plans_.emplace(key, std::move(plan)).first->second;
}

cublasLtMatmulAlgo_t Gemm::fastest(Plan const& plan, std::span<cublasLtMatmulHeuristicResult_t const> proposals,
                                    void const* A, void const* B, float* C, cudaStream_t stream) {
    cublasLtMatmulAlgo_t best_algorithm = proposals.front().algo;
    float best_ms = -1.0f, one = 1.0f, zero = 0.0f;
    for (cublasLtMatmulHeuristicResult_t const& proposal : proposals) {
        cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
        float const ms = milliseconds_on(stream, [&] {
            status = cublasLtMatmul(handle_, plan.operation, &one, B, plan.a, A, plan.b, &zero, C, plan.c, C, plan.c,
                                    &proposal.algo, workspace_, workspace_bytes_, stream);
        });
        if (status == CUBLAS_STATUS_SUCCESS && (best_ms < 0 || ms < best_ms)) {
            best_ms = ms;
            best_algorithm = proposal.algo;
        }
    }
    return best_algorithm;
}

void Gemm::run(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, void const* A,
               std::int64_t lda, void const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
               bool inputs_bf16, cudaStream_t stream) {
    if (M == 0 || N == 0) return;
    if (K == 0) {  // an empty sum: C = beta·C, and beta is 0 or 1 here
        AXONN_INVARIANT(beta == 0.0f || beta == 1.0f, "a GEMM with K = 0 and beta {}", beta);
        if (beta == 0.0f) {
            check(cudaMemset2DAsync(C, ldc * sizeof(float), 0, N * sizeof(float), M, stream), "zero a GEMM's output");
        }
        return;
    }
    ShapeKey const key{transpose_a, transpose_b, M, N, K, lda, ldb, ldc, inputs_bf16, beta != 0.0f,
                       alignment_of(A), alignment_of(B), alignment_of(C)};
    Plan& plan = plan_for(key, A, B, C, stream);
    float const alpha = 1.0f;
    check(cublasLtMatmul(handle_, plan.operation, &alpha, B, plan.a, A, plan.b, &beta, C, plan.c, C, plan.c,
                         &plan.algorithm, workspace_, workspace_bytes_, stream),
          "run a GEMM");
}

}  // namespace axonn::cuda
