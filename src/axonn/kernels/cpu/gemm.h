// General matrix multiply, and the Linear layer built on it (below), row-major: C[M,N] = alpha · op(A) · op(B) + beta · C, in fp32 and with bf16 inputs
// (fp32 accumulation and result, oneDNN's matmul: brgemm kernels on CPUs with avx512_bf16).
// op(A) is [M,K] (A is [M,K], or [K,M] when transpose_a); op(B) is [K,N] (B is [K,N], or [N,K] when transpose_b).
// lda, ldb, ldc are row strides, so a GEMM can run on a column block of a wider matrix (one attention head
// inside the fused QKV activation). float goes to oneDNN; double is a plain loop nest for the
// finite-difference tests, where speed does not matter and exactness does.
#pragma once

#include "axonn/core/bfloat16.h"
#include "axonn/kernels/cpu/gemm_tuning.h"
#include "axonn/kernels/types.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace axonn::cpu {

template <typename T>
void gemm(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, T const* A,
          std::int64_t lda, T const* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc);

// The fp32 product computed the given way (gemm_tuning.h), untimed: gemm<float> runs the way its shape's tuning
// chose, and the tests run each way.
void gemm_way(GemmVariant way, bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
              float alpha, float const* A, std::int64_t lda, float const* B, std::int64_t ldb, float beta, float* C,
              std::int64_t ldc);

// A oneDNN call's status (`call` names it in the message): out of memory (its packing or scratch buffers) is the
// machine's, thrown as std::bad_alloc as any allocation's; any other failure is a bug here (InternalError).
void require_onednn_success(int status, std::string_view call, std::int64_t M, std::int64_t N, std::int64_t K);

// Name and ISA of the GEMM library, for the start-up banner.
char const* gemm_library_name();

// C[M,N] = op(A) · op(B) + beta · C, row-major with row strides as in gemm.h; A and B bf16, C fp32, beta 0 or 1.
// On a CPU with a native bf16 GEMM (bf16_gemm_support), oneDNN's bf16 matmul; elsewhere gemm_bf16_emulated.
void gemm_bf16(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, bfloat16 const* A,
               std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);

// The bf16 product computed the given way (gemm_tuning.h), untimed, as gemm_way for fp32: gemm_bf16 runs the way
// its shape's tuning chose, and the tests run each way. Each of the way's library calls is native or emulated as
// gemm_bf16 would be.
void gemm_bf16_way(GemmVariant way, bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N,
                   std::int64_t K, bfloat16 const* A, std::int64_t lda, bfloat16 const* B, std::int64_t ldb,
                   float beta, float* C, std::int64_t ldc);

// The same product on any CPU: A and B widened to fp32 (exactly) and multiplied by the fp32 GEMM. A product of two
// bf16 values is exact in fp32 and the sums run in fp32, which is what a native bf16 GEMM with fp32 accumulation
// computes; only the order of the sums differs.
void gemm_bf16_emulated(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        bfloat16 const* A, std::int64_t lda, bfloat16 const* B, std::int64_t ldb, float beta, float* C,
                        std::int64_t ldc);

// Whether this CPU and oneDNN have a native bf16 GEMM (not oneDNN's reference kernel), and if not, why: then the
// bf16 GEMMs are emulated.
struct Bf16Support {
    bool native;
    std::string reason;  // "brg:avx512_core_bf16", or why not
};
Bf16Support bf16_gemm_support();

// The Linear layer on these GEMMs (PyTorch's convention): weight is [N_out, K_in], out = inp · weightᵀ + bias;
// M rows (tokens), K input channels, N output channels. Beside the GEMMs so that a Linear's walk from the backend
// to oneDNN is one file.

// out[M,N] = inp[M,K] · weight[N,K]ᵀ + bias[N]      (bias may be null)
template <typename T>
void linear_forward(T* out, T const* inp, T const* weight, T const* bias, std::int64_t M, std::int64_t K,
                    std::int64_t N);

// The backward in its two GEMMs, so that the input gradient's all-reduce can run while the weight gradient is
// computed (AxoNN's OAR):
// dinp[M,K] = dout[M,N] · weight[N,K]      (written, not accumulated: the GEMM's β is 0)
template <typename T>
void linear_backward_input(T* dinp, T const* dout, T const* weight, std::int64_t M, std::int64_t K, std::int64_t N);

// dweight[N,K] (+)= dout[M,N]ᵀ · inp[M,K] as `dweight_write` says;  dbias[N] += Σ_m dout[m,:] (if not null)
template <typename T>
void linear_backward_weight(T* dweight, T* dbias, T const* dout, T const* inp, std::int64_t M, std::int64_t K,
                            std::int64_t N, GradWrite dweight_write);

// Mixed precision: the same GEMMs on bf16 operands with fp32 accumulation and fp32 results. The bias terms read
// fp32 values: bias[N] here, and the fp32 dout[M,N] (dout_f32) for dbias.
void linear_forward(float* out, bfloat16 const* inp, bfloat16 const* weight, float const* bias, std::int64_t M,
                    std::int64_t K, std::int64_t N);
void linear_backward_input(float* dinp, bfloat16 const* dout, bfloat16 const* weight, std::int64_t M, std::int64_t K,
                           std::int64_t N);
void linear_backward_weight(float* dweight, float* dbias, bfloat16 const* dout, float const* dout_f32,
                            bfloat16 const* inp, std::int64_t M, std::int64_t K, std::int64_t N,
                            GradWrite dweight_write);

}  // namespace axonn::cpu
