#include "axonn/kernels/cpu/residual.h"

namespace axonn::cpu {

template <typename T> void residual_forward(T* out, T const* a, T const* b, std::int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T> void residual_backward(T* da, T* db, T const* dout, std::int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

template void residual_forward<float>(float*, float const*, float const*, std::int64_t);
template void residual_forward<double>(double*, double const*, double const*, std::int64_t);
template void residual_backward<float>(float*, float*, float const*, std::int64_t);
template void residual_backward<double>(double*, double*, double const*, std::int64_t);

}  // namespace axonn::cpu
