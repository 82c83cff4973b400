// Row-major GEMMs on the GPU through cuBLASLt, in the convention of kernels/cpu/gemm.h:
// C[M,N] = op(A)[M,K] · op(B)[K,N] + beta · C, with fp32 accumulation and an fp32 C, on fp32 inputs (true fp32:
// no TF32, so that results match the CPU's within fp32 rounding) or bf16 inputs (the tensor cores' bf16 rate).
//
// Layout tuning: for each shape met, cuBLASLt's heuristic proposes its best algorithms; with tuning on, the first
// call times each proposal once and keeps the fastest for that shape, as the CPU backend times its transpose
// variants. With tuning off, the heuristic's first choice always, so that two runs give the same bits.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>

namespace axonn::cuda {

class Gemm {
public:
    Gemm();
    ~Gemm();
    Gemm(Gemm const&) = delete;
    Gemm& operator=(Gemm const&) = delete;

    void set_tuning(bool on) { tuning_ = on; }

    // inputs_bf16: A and B are __nv_bfloat16, else float; C is float either way.
    void run(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, void const* A,
             std::int64_t lda, void const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
             bool inputs_bf16, cudaStream_t stream);

private:
    // transposes, M, N, K, leading dimensions, bf16 inputs, beta ≠ 0, and the alignments of A, B and C in bytes
    // (an operand inside a larger buffer may be aligned less than cuBLASLt's default assumption of 256)
    using ShapeKey = std::tuple<bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                std::int64_t, bool, bool, std::uint32_t, std::uint32_t, std::uint32_t>;
    struct Plan;
    Plan& plan_for(ShapeKey const& key, void const* A, void const* B, float* C, cudaStream_t stream);
    // The proposal that ran the product fastest on these operands (C is overwritten with it).
    cublasLtMatmulAlgo_t fastest(Plan const& plan, std::span<cublasLtMatmulHeuristicResult_t const> proposals,
                                 void const* A, void const* B, float* C, cudaStream_t stream);

    cublasLtHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    std::size_t workspace_bytes_ = 0;
    bool tuning_ = false;
    std::map<ShapeKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace axonn::cuda
