#include "axonn/kernels/cpu/swiglu.h"

#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/vector_math.h"

namespace axonn::cpu {
namespace {

template <typename T> T sigmoid(T x) { return T(1) / (T(1) + exp_approx(-x)); }

}  // namespace

template <typename T, typename Out> void swiglu_forward(Out* out, T const* inp, std::int64_t N, int F) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        T const* gate = inp + n * 2 * F;
        T const* up = gate + F;
        Out* y = out + n * F;
#pragma omp simd
        for (int f = 0; f < F; ++f) y[f] = stored_as<Out>(gate[f] * sigmoid(gate[f]) * up[f]);
    }
}

template <typename T, typename In>
void swiglu_backward(T* dinp, In const* inp, T const* dout, std::int64_t N, int F) {
#pragma omp parallel for schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
        In const* gate_in = inp + n * 2 * F;
        In const* up_in = gate_in + F;
        T const* dy = dout + n * F;
        T* dgate = dinp + n * 2 * F;
        T* dup = dgate + F;
#pragma omp simd
        for (int f = 0; f < F; ++f) {
            T const gate = loaded<T>(gate_in[f]), up = loaded<T>(up_in[f]);
            T const s = sigmoid(gate);
            T const silu = gate * s;
            dgate[f] = dy[f] * up * (s + silu * (T(1) - s));  // silu' = s + g · s · (1 − s)
            dup[f] = dy[f] * silu;
        }
    }
}

template void swiglu_forward<float, float>(float*, float const*, std::int64_t, int);
template void swiglu_forward<float, bfloat16>(bfloat16*, float const*, std::int64_t, int);
template void swiglu_forward<double, double>(double*, double const*, std::int64_t, int);
template void swiglu_backward<float, float>(float*, float const*, float const*, std::int64_t, int);
template void swiglu_backward<float, bfloat16>(float*, bfloat16 const*, float const*, std::int64_t, int);
template void swiglu_backward<double, double>(double*, double const*, double const*, std::int64_t, int);

}  // namespace axonn::cpu
