// RMSNorm over the last dimension (Llama's): out = inp · rstd · weight, rstd = 1/sqrt(mean(inp²) + eps), no mean
// subtracted and no bias. N rows (tokens), C channels held here, C_total in the whole row. As LayerNorm, it is
// exact with the channels split over processes (G_x > 1): each row's Σx² (and in the backward its Σ dnorm·norm)
// is computed locally, summed over the processes (an all-reduce over X), then used; sums are kept in double.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// stats[N] = Σ x² over this process's channels      inp[N,C]
template <typename T> void rmsnorm_statistics(double* stats, T const* inp, std::int64_t N, int C);

// One row's Σ x², the loop every RMSNorm statistics pass runs (the fused residual's too, residual.h).      x[C]
template <typename T> inline double rmsnorm_row_statistics(T const* x, int C) {
    double squares = 0;
#pragma omp simd reduction(+ : squares)
    for (int c = 0; c < C; ++c) squares += static_cast<double>(x[c]) * x[c];
    return squares;
}

// out[N,C] = inp · rstd · weight, rstd from stats[N] summed over C_total channels; saves rstd[N] for the backward.
// out[N,C] T or bf16, inp[N,C], weight[C]
template <typename T, typename Out>
void rmsnorm_forward(Out* out, T* rstd, T const* inp, T const* weight, double const* stats, std::int64_t N, int C,
                     int C_total, double eps);

// stats[N] = Σ dnorm · norm over this process's channels, dnorm = dout · weight, norm = inp · rstd
template <typename T>
void rmsnorm_backward_statistics(double* stats, T const* dout, T const* inp, T const* weight, T const* rstd,
                                 std::int64_t N, int C);

// dinp[N,C] += rstd · (dnorm − norm · mean(dnorm · norm)), the mean from stats over C_total;
// dweight[C] += Σ_n norm · dout
template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, T const* dout, T const* inp, T const* weight, T const* rstd,
                      double const* stats, std::int64_t N, int C, int C_total);

}  // namespace axonn::cpu
