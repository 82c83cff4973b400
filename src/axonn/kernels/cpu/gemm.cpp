#include "axonn/kernels/cpu/gemm.h"

#include "axonn/core/error.h"
#include "axonn/kernels/cpu/gemm_tuning.h"

#include <oneapi/dnnl/dnnl.h>

namespace axonn::cpu {

template <>
void gemm<float>(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                 float const* A, std::int64_t lda, float const* B, std::int64_t ldb, float beta, float* C,
                 std::int64_t ldc) {
    // The product over inner indices k0 ... k0+k−1 into out (row stride ld_out).
    auto part_into = [&](float* out, std::int64_t ld_out) {
        return [=](std::int64_t k0, std::int64_t k, float part_beta) {
            dnnl_status_t const status =
                dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', M, N, k, alpha,
                           inner_slice_a(A, lda, transpose_a, k0), lda, inner_slice_b(B, ldb, transpose_b, k0), ldb,
                           part_beta, out, ld_out);
            invariant(status == dnnl_success, "oneDNN sgemm failed (status {}) for M={} N={} K={}",
                      static_cast<int>(status), M, N, k);
        };
    };
    GemmVariant const variant =
        gemm_variant({false, transpose_a, transpose_b, M, N, K}, [&](GemmVariant way, float* scratch) {
            run_gemm_variant(way, K, 0.0f, part_into(scratch, N));
        });
    run_gemm_variant(variant, K, beta, part_into(C, ldc));
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

}  // namespace axonn::cpu
