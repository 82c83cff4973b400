// LayerNorm over the last dimension, eps = 1e-5 as in GPT-2. N rows (tokens), C channels held here, C_total
// channels in the whole row. With the channels split over processes (G_x > 1) each process holds C of the
// C_total: the per-row statistics are computed locally, summed over the processes (all-reduce over X), and
// then used to normalise; alone, C = C_total and the sums are used as they are. The sums are kept in double:
// the variance is E[x²] − E[x]², which would cancel badly in fp32.
#pragma once

#include <cstdint>

namespace axonn::cpu {

inline constexpr double layernorm_eps = 1e-5;

// stats[N,2] = {Σ x, Σ x²} over this process's channels      inp[N,C]
template <typename T> void layernorm_statistics(double* stats, T const* inp, std::int64_t N, int C);

// One row's {Σ x, Σ x²} into stats[2], the loop every LayerNorm statistics pass runs (the fused residual's too,
// residual.h), so that they sum in the same order.      x[C]
template <typename T> inline void layernorm_row_statistics(double* stats, T const* x, int C) {
    double sum = 0, squares = 0;
#pragma omp simd reduction(+ : sum, squares)
    for (int c = 0; c < C; ++c) {
        sum += x[c];
        squares += static_cast<double>(x[c]) * x[c];
    }
    stats[0] = sum;
    stats[1] = squares;
}

// out[N,C] = (inp − mean) · rstd · weight + bias, mean and rstd from stats[N,2] summed over C_total channels;
// saves mean[N] and rstd[N] for the backward.      out[N,C] T or bf16, inp[N,C], weight[C], bias[C]
template <typename T, typename Out>
void layernorm_forward(Out* out, T* mean, T* rstd, T const* inp, T const* weight, T const* bias, double const* stats,
                       std::int64_t N, int C, int C_total);

// stats[N,2] = {Σ dnorm, Σ dnorm · norm} over this process's channels, dnorm = dout · weight
template <typename T>
void layernorm_backward_statistics(double* stats, T const* dout, T const* inp, T const* weight, T const* mean,
                                   T const* rstd, std::int64_t N, int C);

// dinp[N,C] += rstd · (dnorm − mean(dnorm) − norm · mean(dnorm · norm)), the means from stats over C_total;
// dweight[C] += Σ_n norm · dout; dbias[C] += Σ_n dout
template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, T const* dout, T const* inp, T const* weight, T const* mean,
                        T const* rstd, double const* stats, std::int64_t N, int C, int C_total);

}  // namespace axonn::cpu
