#include "axonn/kernels/cpu/gelu.h"

#include "axonn/kernels/cpu/vector_math.h"

namespace axonn::cpu {
namespace {

template <typename T> constexpr T gelu_scale = static_cast<T>(0.7978845608028654);  // sqrt(2/π)
template <typename T> constexpr T gelu_cubic = static_cast<T>(0.044715);

}  // namespace

template <typename T> void gelu_forward(T* out, T const* inp, std::int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
        T const u = inp[i];
        T const inner = gelu_scale<T> * (u + gelu_cubic<T> * u * u * u);
        out[i] = T(0.5) * u * (T(1) + tanh_approx(inner));
    }
}

template <typename T> void gelu_backward(T* dinp, T const* inp, T const* dout, std::int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
        T const u = inp[i];
        T const inner = gelu_scale<T> * (u + gelu_cubic<T> * u * u * u);
        T const tanh_inner = tanh_approx(inner);
        T const sech2 = T(1) - tanh_inner * tanh_inner;
        T const dinner = gelu_scale<T> * (T(1) + T(3) * gelu_cubic<T> * u * u);
        T const grad = T(0.5) * (T(1) + tanh_inner) + T(0.5) * u * sech2 * dinner;
        dinp[i] += grad * dout[i];
    }
}

template void gelu_forward<float>(float*, float const*, std::int64_t);
template void gelu_forward<double>(double*, double const*, std::int64_t);
template void gelu_backward<float>(float*, float const*, float const*, std::int64_t);
template void gelu_backward<double>(double*, double const*, double const*, std::int64_t);

}  // namespace axonn::cpu
