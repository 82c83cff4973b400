#include "axonn/kernels/cpu/gelu.h"

#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/vector_math.h"

#include <omp.h>

#include <algorithm>
#include <type_traits>

namespace axonn::cpu {
namespace {

template <typename T> constexpr T gelu_scale = static_cast<T>(0.7978845608028654);  // sqrt(2/π)
template <typename T> constexpr T gelu_cubic = static_cast<T>(0.044715);

template <typename T> T gelu(T u) {
    T const inner = gelu_scale<T> * (u + gelu_cubic<T> * u * u * u);
    return T(0.5) * u * (T(1) + tanh_approx(inner));
}

template <typename T> T gelu_derivative(T u) {
    T const inner = gelu_scale<T> * (u + gelu_cubic<T> * u * u * u);
    T const tanh_inner = tanh_approx(inner);
    T const sech2 = T(1) - tanh_inner * tanh_inner;
    T const dinner = gelu_scale<T> * (T(1) + T(3) * gelu_cubic<T> * u * u);
    return T(0.5) * (T(1) + tanh_inner) + T(0.5) * u * sech2 * dinner;
}

// kept: pre itself (Kept = T: the sum written in place where the bias changes it) or its rounding (always written).
template <typename T, typename Out, typename Kept, bool with_bias>
void bias_gelu_rows(Out* out, Kept* kept, T const* pre, T const* bias, std::int64_t N, int F) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* u = pre + n * F;
        Kept* k = kept + n * F;
        Out* y = out + n * F;
#pragma omp simd
        for (int f = 0; f < F; ++f) {
            T const value = with_bias ? u[f] + bias[f] : u[f];
            if constexpr (with_bias || !std::is_same_v<Kept, T>) k[f] = stored_as<Kept>(value);
            y[f] = stored_as<Out>(gelu(value));
        }
    }
}

template <typename T, typename Out, typename Kept>
void bias_gelu(Out* out, Kept* kept, T const* pre, T const* bias, std::int64_t N, int F) {
    if (bias != nullptr) {
        bias_gelu_rows<T, Out, Kept, true>(out, kept, pre, bias, N, F);
    } else {
        bias_gelu_rows<T, Out, Kept, false>(out, kept, pre, nullptr, N, F);
    }
}

// Columns [first, last) of every row, rows in order, so that each dbias[f] adds its rows in order whatever the
// threads.
template <typename T, typename Out, typename In, bool with_bias>
void gelu_bias_backward_columns(Out* dpre, T* dbias, In const* pre, T const* dout, std::int64_t N, int F, int first,
                                int last) {
    for (std::int64_t n = 0; n < N; ++n) {
        std::int64_t const row = n * F;
#pragma omp simd
        for (int f = first; f < last; ++f) {
            T const g = gelu_derivative(loaded<T>(pre[row + f])) * dout[row + f];
            dpre[row + f] = stored_as<Out>(g);
            if constexpr (with_bias) dbias[f] += g;
        }
    }
}

}  // namespace

template <typename T, typename Out>
void bias_gelu_forward(Out* out, T* pre, T const* bias, std::int64_t N, int F) {
    bias_gelu(out, pre, pre, bias, N, F);
}

template <typename Out>
void bias_gelu_forward(Out* out, bfloat16* kept_pre, float const* pre, float const* bias, std::int64_t N, int F) {
    bias_gelu(out, kept_pre, pre, bias, N, F);
}

template <typename T, typename Out, typename In>
void gelu_bias_backward(Out* dpre, T* dbias, In const* pre, T const* dout, std::int64_t N, int F) {
    // Each thread takes a strip of whole vectors of columns over every row: one thread streams whole rows.
    constexpr int vector = 16;
    int const threads = omp_get_max_threads();
    int const strip = (F + threads * vector - 1) / (threads * vector) * vector;  // F / threads, whole vectors
#pragma omp parallel for schedule(static)
    for (int t = 0; t < threads; ++t) {
        int const first = std::min(F, t * strip), last = std::min(F, first + strip);
        if (first >= last) continue;
        if (dbias != nullptr) {
            gelu_bias_backward_columns<T, Out, In, true>(dpre, dbias, pre, dout, N, F, first, last);
        } else {
            gelu_bias_backward_columns<T, Out, In, false>(dpre, nullptr, pre, dout, N, F, first, last);
        }
    }
}

template void bias_gelu_forward<float, float>(float*, float*, float const*, std::int64_t, int);
template void bias_gelu_forward<float, bfloat16>(bfloat16*, float*, float const*, std::int64_t, int);
template void bias_gelu_forward<double, double>(double*, double*, double const*, std::int64_t, int);
template void bias_gelu_forward<float>(float*, bfloat16*, float const*, float const*, std::int64_t, int);
template void bias_gelu_forward<bfloat16>(bfloat16*, bfloat16*, float const*, float const*, std::int64_t, int);
template void gelu_bias_backward<float, float, float>(float*, float*, float const*, float const*, std::int64_t, int);
template void gelu_bias_backward<float, float, bfloat16>(float*, float*, bfloat16 const*, float const*, std::int64_t,
                                                         int);
template void gelu_bias_backward<float, bfloat16, float>(bfloat16*, float*, float const*, float const*, std::int64_t,
                                                         int);
template void gelu_bias_backward<float, bfloat16, bfloat16>(bfloat16*, float*, bfloat16 const*, float const*,
                                                            std::int64_t, int);
template void gelu_bias_backward<double, double, double>(double*, double*, double const*, double const*, std::int64_t,
                                                         int);

}  // namespace axonn::cpu
