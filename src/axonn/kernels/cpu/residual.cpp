#include "axonn/kernels/cpu/residual.h"

#include "axonn/kernels/cpu/layernorm.h"
#include "axonn/kernels/cpu/rmsnorm.h"

namespace axonn::cpu {

template <typename T> void residual_forward(T* out, T const* a, T const* b, std::int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void residual_norm_statistics(T* sum, T const* a, T const* b, double* stats, std::int64_t N, int C, bool layernorm) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        std::int64_t const row = n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) sum[row + c] = a[row + c] + b[row + c];
        if (layernorm) {
            layernorm_row_statistics(stats + 2 * n, sum + row, C);
        } else {
            stats[n] = rmsnorm_row_statistics(sum + row, C);
        }
    }
}

template void residual_forward<float>(float*, float const*, float const*, std::int64_t);
template void residual_forward<double>(double*, double const*, double const*, std::int64_t);
template void residual_norm_statistics<float>(float*, float const*, float const*, double*, std::int64_t, int, bool);
template void residual_norm_statistics<double>(double*, double const*, double const*, double*, std::int64_t, int,
                                               bool);

}  // namespace axonn::cpu
