#include "axonn/kernels/cpu/attention.h"

#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/vector_math.h"

#include <cmath>
#include <vector>

namespace axonn::cpu {
namespace {

// Row i of a [T,T] score matrix becomes softmax over columns 0..i; columns i+1.. become 0.
template <typename T> void causal_softmax_rows(T* scores, int T_) {
    for (int i = 0; i < T_; ++i) {
        T* row = scores + static_cast<std::int64_t>(i) * T_;
        T maximum = row[0];
        for (int j = 1; j <= i; ++j) maximum = row[j] > maximum ? row[j] : maximum;
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j <= i; ++j) {
            row[j] = exp_approx(row[j] - maximum);
            sum += row[j];
        }
        T const inverse = T(1) / sum;
#pragma omp simd
        for (int j = 0; j <= i; ++j) row[j] *= inverse;
        for (int j = i + 1; j < T_; ++j) row[j] = 0;
    }
}

}  // namespace

template <typename T>
void attention_forward(T* out, T* att, T const* qkv, int B, int T_, int C, int NH) {
    int const hs = C / NH;
    std::int64_t const C3 = 3 * static_cast<std::int64_t>(C);
    T const scale = T(1) / std::sqrt(static_cast<T>(hs));
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
            T const* q = qkv + static_cast<std::int64_t>(b) * T_ * C3 + h * hs;  // [T,hs], row stride 3C
            T const* k = q + C;
            T const* v = q + 2 * C;
            T* probabilities = att + (static_cast<std::int64_t>(b) * NH + h) * T_ * T_;  // [T,T]
            T* out_bh = out + static_cast<std::int64_t>(b) * T_ * C + h * hs;            // [T,hs], row stride C
            gemm<T>(false, true, T_, T_, hs, scale, q, C3, k, C3, T(0), probabilities, T_);
            causal_softmax_rows(probabilities, T_);
            gemm<T>(false, false, T_, hs, T_, T(1), probabilities, T_, v, C3, T(0), out_bh, C);
        }
    }
}

template <typename T>
void attention_backward(T* dqkv, T const* dout, T const* qkv, T const* att, int B, int T_, int C, int NH) {
    int const hs = C / NH;
    std::int64_t const C3 = 3 * static_cast<std::int64_t>(C);
    T const scale = T(1) / std::sqrt(static_cast<T>(hs));
#pragma omp parallel
    {
        std::vector<T> dscores(static_cast<std::size_t>(T_) * T_);  // one [T,T] scratch per thread
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                std::int64_t const offset = static_cast<std::int64_t>(b) * T_ * C3 + h * hs;
                T const* q = qkv + offset;
                T const* k = q + C;
                T const* v = q + 2 * C;
                T* dq = dqkv + offset;
                T* dk = dq + C;
                T* dv = dq + 2 * C;
                T const* probabilities = att + (static_cast<std::int64_t>(b) * NH + h) * T_ * T_;
                T const* dout_bh = dout + static_cast<std::int64_t>(b) * T_ * C + h * hs;
                T* dp = dscores.data();
                // Mirror of the forward: out = P·v, then P = softmax(scale · q·kᵀ).
                gemm<T>(false, true, T_, T_, hs, T(1), dout_bh, C, v, C3, T(0), dp, T_);           // dP = dO·vᵀ
                gemm<T>(true, false, T_, hs, T_, T(1), probabilities, T_, dout_bh, C, T(1), dv, C3);  // dv += Pᵀ·dO
                for (int i = 0; i < T_; ++i) {
                    T const* p_row = probabilities + static_cast<std::int64_t>(i) * T_;
                    T* dp_row = dp + static_cast<std::int64_t>(i) * T_;
                    T dot = 0;
#pragma omp simd reduction(+ : dot)
                    for (int j = 0; j < T_; ++j) dot += p_row[j] * dp_row[j];
                    // Softmax backward; masked entries have P = 0 and so get no gradient.
#pragma omp simd
                    for (int j = 0; j < T_; ++j) dp_row[j] = p_row[j] * (dp_row[j] - dot) * scale;
                }
                gemm<T>(false, false, T_, hs, T_, T(1), dp, T_, k, C3, T(1), dq, C3);  // dq += dS·k
                gemm<T>(true, false, T_, hs, T_, T(1), dp, T_, q, C3, T(1), dk, C3);   // dk += dSᵀ·q
            }
        }
    }
}

template void attention_forward<float>(float*, float*, float const*, int, int, int, int);
template void attention_forward<double>(double*, double*, double const*, int, int, int, int);
template void attention_backward<float>(float*, float const*, float const*, float const*, int, int, int, int);
template void attention_backward<double>(double*, double const*, double const*, double const*, int, int, int, int);

}  // namespace axonn::cpu
