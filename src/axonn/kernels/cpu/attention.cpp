#include "axonn/kernels/cpu/attention.h"

#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace axonn::cpu {
namespace {

// Where one query head of one sequence lives: its query columns and its group's key and value columns ([T,hs]
// each, row stride C + 2·NKV·hs), its rows of the output (and of the output's gradient; [T,hs], row stride C) and
// its log-sum-exps ([T]). Query head h reads key/value head h / (NH/NKV).
template <typename T> struct Head {
    int const hs;
    T const scale;
    std::int64_t const ld_qkv, ld_out, sequence;  // sequence: where sequence b's rows of qkv start
    std::int64_t const q_offset, k_offset, v_offset, out_offset, lse_offset;

    // This head's query, key and value columns in a [B,T,C + 2·NKV·hs] buffer (the activation, or its gradient).
    template <typename U> U* q(U* qkv) const { return qkv + q_offset; }
    template <typename U> U* k(U* qkv) const { return qkv + k_offset; }
    template <typename U> U* v(U* qkv) const { return qkv + v_offset; }

    Head(int b, int h, int T_, int C, int NH, int NKV)
        : hs(C / NH), scale(T(1) / std::sqrt(static_cast<T>(hs))), ld_qkv(C + 2 * static_cast<std::int64_t>(NKV) * hs),
          ld_out(C), sequence(static_cast<std::int64_t>(b) * T_ * ld_qkv),
          q_offset(sequence + static_cast<std::int64_t>(h) * hs),
          k_offset(sequence + C + static_cast<std::int64_t>(h / (NH / NKV)) * hs),
          v_offset(k_offset + static_cast<std::int64_t>(NKV) * hs),
          out_offset(static_cast<std::int64_t>(b) * T_ * C + static_cast<std::int64_t>(h) * hs),
          lse_offset((static_cast<std::int64_t>(b) * NH + h) * T_) {}
};

// How many keys of the tile starting at key k0 (cols wide) query row `query` may see: keys k0 ... query.
int visible_keys(int query, int k0, int cols) { return std::clamp(query - k0 + 1, 0, cols); }

// C[M,N] = op(A)·op(B) + beta·C with fp32 (or double) accumulation, on inputs of type In: T itself, or bf16.
template <typename T, typename In>
void tile_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, In const* A, std::int64_t lda,
               In const* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
    if constexpr (std::is_same_v<In, bfloat16>) {
        gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    } else {
        gemm<T>(ta, tb, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc);
    }
}

// A tile of probabilities or their gradients (rows × ld, fp32) as a GEMM's input: itself, or rounded to bf16 into
// the thread's `rounded` buffer.
template <typename In, typename T> In const* gemm_input(T const* tile, std::int64_t n, std::vector<In>& rounded) {
    if constexpr (std::is_same_v<In, T>) {
        return tile;
    } else {
#pragma omp simd
        for (std::int64_t i = 0; i < n; ++i) rounded[i] = to_bfloat16(tile[i]);
        return rounded.data();
    }
}

// Scores of a query tile against a key tile: S[rows,cols] = scale · q[q0.., hs] · k[k0.., hs]ᵀ (row stride ld_s).
template <typename T, typename In>
void tile_scores(T* S, std::int64_t ld_s, In const* q, In const* k, Head<T> const& head, int q0, int rows, int k0,
                 int cols) {
    tile_gemm<T, In>(false, true, rows, cols, head.hs, q + q0 * head.ld_qkv, head.ld_qkv, k + k0 * head.ld_qkv,
                     head.ld_qkv, T(0), S, ld_s);
    for (int i = 0; i < rows; ++i) {
        T* s = S + static_cast<std::int64_t>(i) * ld_s;
#pragma omp simd
        for (int j = 0; j < cols; ++j) s[j] *= head.scale;
    }
}

// The kernels, on GEMM inputs of type In (T, or bf16 copies of qkv and dout); everything else in T.
template <typename T, typename In>
void fused_attention_forward(T* out, T* lse, In const* qkv, int B, int T_, int C, int NH, int NKV,
                             AttentionTiles tiles) {
    int const Br = tiles.queries, Bc = tiles.keys;
#pragma omp parallel
    {
        // One tile of scores (then probabilities) and each query row's running maximum and sum, per thread.
        std::vector<T> S(static_cast<std::size_t>(Br) * Bc), row_max(Br), row_sum(Br);
        std::vector<In> rounded(std::is_same_v<In, T> ? 0 : S.size());
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                Head<T> const head(b, h, T_, C, NH, NKV);
                In const *q = head.q(qkv), *k = head.k(qkv), *v = head.v(qkv);
                T* o = out + head.out_offset;
                for (int q0 = 0; q0 < T_; q0 += Br) {
                    int const rows = std::min(Br, T_ - q0), key_end = q0 + rows;
                    for (int i = 0; i < rows; ++i) std::fill_n(o + (q0 + i) * head.ld_out, head.hs, T(0));
                    std::fill_n(row_max.begin(), rows, -std::numeric_limits<T>::infinity());
                    std::fill_n(row_sum.begin(), rows, T(0));
                    for (int k0 = 0; k0 < key_end; k0 += Bc) {  // key tiles above the diagonal are never visited
                        int const cols = std::min(Bc, key_end - k0);
                        tile_scores<T, In>(S.data(), Bc, q, k, head, q0, rows, k0, cols);
                        for (int i = 0; i < rows; ++i) {
                            T* s = S.data() + static_cast<std::int64_t>(i) * Bc;
                            int const visible = visible_keys(q0 + i, k0, cols);
                            std::fill(s + visible, s + cols, T(0));
                            if (visible == 0) continue;
                            // Online softmax: the new maximum rescales what this row has summed so far.
                            T const maximum = std::max(row_max[i], *std::max_element(s, s + visible));
                            T const correction = exp_approx(row_max[i] - maximum);
                            T sum = 0;
#pragma omp simd reduction(+ : sum)
                            for (int j = 0; j < visible; ++j) {
                                s[j] = exp_approx(s[j] - maximum);
                                sum += s[j];
                            }
                            row_sum[i] = row_sum[i] * correction + sum;
                            row_max[i] = maximum;
                            if (correction != T(1)) {
                                T* o_row = o + (q0 + i) * head.ld_out;
#pragma omp simd
                                for (int d = 0; d < head.hs; ++d) o_row[d] *= correction;
                            }
                        }
                        // o[q0.., hs] += P[rows,cols] · v[k0.., hs]
                        tile_gemm<T, In>(false, false, rows, head.hs, cols,
                                         gemm_input<In>(S.data(), static_cast<std::int64_t>(rows) * Bc, rounded), Bc,
                                         v + k0 * head.ld_qkv, head.ld_qkv, T(1), o + q0 * head.ld_out, head.ld_out);
                    }
                    for (int i = 0; i < rows; ++i) {
                        T const inverse = T(1) / row_sum[i];
                        T* o_row = o + (q0 + i) * head.ld_out;
#pragma omp simd
                        for (int d = 0; d < head.hs; ++d) o_row[d] *= inverse;
                        lse[head.lse_offset + q0 + i] = row_max[i] + std::log(row_sum[i]);
                    }
                }
            }
        }
    }
}

template <typename T, typename In>
void fused_attention_backward(T* dqkv, In const* dout, In const* qkv, T const* out, T const* lse, int B, int T_, int C,
                              int NH, int NKV, AttentionTiles tiles) {
    int const Br = tiles.queries, Bc = tiles.keys;
#pragma omp parallel
    {
        // Per thread: a tile of recomputed probabilities P, of their gradients dP (then dS), and each query row's
        // D = dO·O, which equals Σ_j P_ij dP_ij (the softmax backward's row sum) without storing a row of P.
        std::vector<T> P(static_cast<std::size_t>(Br) * Bc), dP(static_cast<std::size_t>(Br) * Bc), D(Br);
        std::vector<In> rounded(std::is_same_v<In, T> ? 0 : P.size());
        // The query heads that share a key/value head run on one thread, one after another: they add into the same
        // dk and dv.
        int const group = NH / NKV;
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b) {
            for (int kv = 0; kv < NKV; ++kv) {
                for (int h = kv * group; h < (kv + 1) * group; ++h) {
                    Head<T> const head(b, h, T_, C, NH, NKV);
                    In const *q = head.q(qkv), *k = head.k(qkv), *v = head.v(qkv);
                    T *dq = head.q(dqkv), *dk = head.k(dqkv), *dv = head.v(dqkv);
                    T const* o = out + head.out_offset;
                    In const* d_o = dout + head.out_offset;
                    T const* lse_bh = lse + head.lse_offset;
                    std::int64_t const ld = head.ld_qkv;
                    for (int q0 = 0; q0 < T_; q0 += Br) {
                        int const rows = std::min(Br, T_ - q0), key_end = q0 + rows;
                        for (int i = 0; i < rows; ++i) {
                            T const* o_row = o + (q0 + i) * head.ld_out;
                            In const* do_row = d_o + (q0 + i) * head.ld_out;
                            T dot = 0;
    #pragma omp simd reduction(+ : dot)
                            for (int d = 0; d < head.hs; ++d) dot += o_row[d] * static_cast<T>(do_row[d]);
                            D[i] = dot;
                        }
                        for (int k0 = 0; k0 < key_end; k0 += Bc) {
                            int const cols = std::min(Bc, key_end - k0);
                            // Mirror of the forward: P = exp(scale · q·kᵀ − lse), recomputed; then out = P·v.
                            tile_scores<T, In>(P.data(), Bc, q, k, head, q0, rows, k0, cols);
                            for (int i = 0; i < rows; ++i) {
                                T* p = P.data() + static_cast<std::int64_t>(i) * Bc;
                                int const visible = visible_keys(q0 + i, k0, cols);
                                T const row_lse = lse_bh[q0 + i];
    #pragma omp simd
                                for (int j = 0; j < visible; ++j) p[j] = exp_approx(p[j] - row_lse);
                                std::fill(p + visible, p + cols, T(0));  // masked: no probability, no gradient
                            }
                            // dP = dO[q0..]·v[k0..]ᵀ;  dv[k0..] += Pᵀ·dO[q0..]
                            std::int64_t const tile = static_cast<std::int64_t>(rows) * Bc;
                            tile_gemm<T, In>(false, true, rows, cols, head.hs, d_o + q0 * head.ld_out, head.ld_out,
                                             v + k0 * ld, ld, T(0), dP.data(), Bc);
                            tile_gemm<T, In>(true, false, cols, head.hs, rows,
                                             gemm_input<In>(P.data(), tile, rounded), Bc,
                                             d_o + q0 * head.ld_out, head.ld_out, T(1), dv + k0 * ld, ld);
                            for (int i = 0; i < rows; ++i) {  // dS = P ∘ (dP − D) · scale
                                T const* p = P.data() + static_cast<std::int64_t>(i) * Bc;
                                T* ds = dP.data() + static_cast<std::int64_t>(i) * Bc;
    #pragma omp simd
                                for (int j = 0; j < cols; ++j) ds[j] = p[j] * (ds[j] - D[i]) * head.scale;
                            }
                            // dq[q0..] += dS·k[k0..];  dk[k0..] += dSᵀ·q[q0..]
                            In const* ds = gemm_input<In>(dP.data(), tile, rounded);
                            tile_gemm<T, In>(false, false, rows, head.hs, cols, ds, Bc, k + k0 * ld, ld, T(1),
                                             dq + q0 * ld, ld);
                            tile_gemm<T, In>(true, false, cols, head.hs, rows, ds, Bc, q + q0 * ld, ld, T(1),
                                             dk + k0 * ld, ld);
                        }
                    }
                }
            }
        }
    }
}

}  // namespace

std::int64_t attention_scores_computed(int T_, AttentionTiles tiles) {
    std::int64_t area = 0;
    for (int q0 = 0; q0 < T_; q0 += tiles.queries) {
        int const rows = std::min(tiles.queries, T_ - q0);
        area += static_cast<std::int64_t>(rows) * (q0 + rows);  // keys 0 ... the tile's last query
    }
    return area;
}

template <typename T>
void attention_forward(T* out, T* lse, T const* qkv, int B, int T_, int C, int NH, int NKV, AttentionTiles tiles) {
    fused_attention_forward<T, T>(out, lse, qkv, B, T_, C, NH, NKV, tiles);
}
template <typename T>
void attention_backward(T* dqkv, T const* dout, T const* qkv, T const* out, T const* lse, int B, int T_, int C,
                        int NH, int NKV, AttentionTiles tiles) {
    fused_attention_backward<T, T>(dqkv, dout, qkv, out, lse, B, T_, C, NH, NKV, tiles);
}
void attention_forward_bf16(float* out, float* lse, bfloat16 const* qkv, int B, int T_, int C, int NH, int NKV,
                            AttentionTiles tiles) {
    fused_attention_forward<float, bfloat16>(out, lse, qkv, B, T_, C, NH, NKV, tiles);
}
void attention_backward_bf16(float* dqkv, bfloat16 const* dout, bfloat16 const* qkv, float const* out,
                             float const* lse, int B, int T_, int C, int NH, int NKV, AttentionTiles tiles) {
    fused_attention_backward<float, bfloat16>(dqkv, dout, qkv, out, lse, B, T_, C, NH, NKV, tiles);
}

template void attention_forward<float>(float*, float*, float const*, int, int, int, int, int, AttentionTiles);
template void attention_forward<double>(double*, double*, double const*, int, int, int, int, int, AttentionTiles);
template void attention_backward<float>(float*, float const*, float const*, float const*, float const*, int, int, int,
                                        int, int, AttentionTiles);
template void attention_backward<double>(double*, double const*, double const*, double const*, double const*, int,
                                         int, int, int, int, AttentionTiles);

}  // namespace axonn::cpu
