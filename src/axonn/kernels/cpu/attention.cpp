#include "axonn/kernels/cpu/attention.h"

#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu/tile_gemm.h"
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

// Rows of tiles and of packed operands are padded to whole vectors of 16, so that loops over a row can run in
// whole vectors: a loop of `visible` floats would end in up to 15 scalar exps, as many as its vectors take.
constexpr int lanes = 16;
int whole_vectors(int n) { return (n + lanes - 1) / lanes * lanes; }

// One head's [T,hs] columns of a row-major buffer (row stride ld) as a tile GEMM's B operand reads them fastest. For
// fp32 and double inputs they are copied to a row stride of hs: at the activation's stride (thousands of elements), a
// tile's rows of B fall into a few L1 sets and evict each other (measured on an Intel Xeon: P·V at 127 GFLOP/s from
// qkv, at 167 from the copy). oneDNN reads bf16 ones in place and packs them itself.
template <typename In> class HeadRows {
  public:
    void set(In const* columns, std::int64_t ld, int T_, int hs) {
        if constexpr (std::is_same_v<In, bfloat16>) {
            rows_ = columns, ld_ = ld;
        } else {
            copy_.resize(static_cast<std::size_t>(T_) * hs);
            for (int t = 0; t < T_; ++t) std::copy_n(columns + t * ld, hs, copy_.data() + std::int64_t{t} * hs);
            rows_ = copy_.data(), ld_ = hs;
        }
    }
    In const* row(int t) const { return rows_ + t * ld_; }
    std::int64_t ld() const { return ld_; }

  private:
    In const* rows_ = nullptr;
    std::int64_t ld_ = 0;
    std::vector<In> copy_;  // [T,hs]: only for fp32 and double inputs
};

// One head's keys (or values), [T,hs] at row stride ld, as the products with their transpose read them. The tile GEMM
// wants B row-major, so for fp32 and double inputs they are packed once per head into [hs,T] (the head's tiles reuse
// them T / queries-per-tile times), rows 16 elements longer than T: rows of 1,024 floats, 4 KiB apart, would share L1
// sets (q·kᵀ at 122 GFLOP/s against 149). oneDNN reads bf16 ones transposed in place.
template <typename In> class TransposedHead {
  public:
    void set(In const* columns, std::int64_t ld, int T_, int hs) {
        columns_ = columns, ld_ = ld;
        if constexpr (!std::is_same_v<In, bfloat16>) {
            stride_ = whole_vectors(T_) + lanes;
            packed_.resize(static_cast<std::size_t>(hs) * stride_);
            transpose(packed_.data(), stride_, columns, ld, T_, hs);
        }
    }
    // C[rows,cols] = A[rows,hs] · (rows k0 ... k0 + cols − 1 of the head)ᵀ (A row stride lda, C row stride ldc)
    template <typename T>
    void times(T* C, std::int64_t ldc, In const* A, std::int64_t lda, int rows, int k0, int cols, int hs) const {
        if constexpr (std::is_same_v<In, bfloat16>) {
            gemm_bf16(false, true, rows, cols, hs, A, lda, columns_ + k0 * ld_, ld_, T(0), C, ldc);
        } else {
            tile_gemm<T>(rows, cols, hs, A, lda, 1, packed_.data() + k0, stride_, T(0), C, ldc);
        }
    }

  private:
    In const* columns_ = nullptr;
    std::int64_t ld_ = 0, stride_ = 0;
    std::vector<In> packed_;  // [hs,stride]: only for fp32 and double inputs
};

// C[M,N] = op(A)·B + beta·C with B rows b_row ... b_row + K − 1 of a head (op(A) = Aᵀ when transpose_a; A
// row-major with row stride lda), fp32 (or double) accumulation, on inputs of type In: T itself (the tile GEMM),
// or bf16 (oneDNN's matmul).
template <typename T, typename In>
void tile_product(bool transpose_a, int M, int N, int K, In const* A, std::int64_t lda, HeadRows<In> const& B,
                  int b_row, T beta, T* C, std::int64_t ldc) {
    if constexpr (std::is_same_v<In, bfloat16>) {
        gemm_bf16(transpose_a, false, M, N, K, A, lda, B.row(b_row), B.ld(), beta, C, ldc);
    } else {
        tile_gemm<T>(M, N, K, A, transpose_a ? 1 : lda, transpose_a ? lda : 1, B.row(b_row), B.ld(), beta, C, ldc);
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

// Unscaled scores of a query tile against a key tile: S[rows,cols] = q[q0.., hs] · k[k0.., hs]ᵀ (row stride ld_s).
// The softmax applies the scale 1/sqrt(hs) as it exponentiates, which saves a pass over the tile.
template <typename T, typename In>
void tile_scores(T* S, std::int64_t ld_s, In const* q, TransposedHead<In> const& keys, Head<T> const& head, int q0,
                 int rows, int k0, int cols) {
    keys.times(S, ld_s, q + q0 * head.ld_qkv, head.ld_qkv, rows, k0, cols, head.hs);
}

// x[j] = exp(scale·x[j] − shift) for the visible keys j < visible, 0 for the rest of the row's `width` (a multiple
// of 16); returns the sum. The exp runs over whole vectors, and the masked entries it touches are zeroed after it
// (a mask inside the loop makes GCC split it into a vector loop and a scalar one).
template <typename T> T exponentiate_visible(T* x, int visible, int width, T scale, T shift) {
    int const exponentiated = whole_vectors(visible);
#pragma omp simd
    for (int j = 0; j < exponentiated; ++j) x[j] = exp_approx(scale * x[j] - shift);
    std::fill(x + visible, x + width, T(0));
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < exponentiated; ++j) sum += x[j];
    return sum;
}

// The kernels, on GEMM inputs of type In (T, or bf16 copies of qkv and dout); everything else in T.
template <typename T, typename In>
void fused_attention_forward(T* out, T* lse, In const* qkv, int B, int T_, int C, int NH, int NKV,
                             AttentionTiles tiles) {
    int const Br = tiles.queries, Bc = tiles.keys, ld_s = whole_vectors(Bc);
#pragma omp parallel
    {
        // One tile of scores (then probabilities) and each query row's running maximum and sum, per thread.
        std::vector<T> S(static_cast<std::size_t>(Br) * ld_s), row_max(Br), row_sum(Br);
        std::vector<In> rounded(std::is_same_v<In, T> ? 0 : S.size());
        TransposedHead<In> keys;
        HeadRows<In> values;
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                Head<T> const head(b, h, T_, C, NH, NKV);
                In const* q = head.q(qkv);
                keys.set(head.k(qkv), head.ld_qkv, T_, head.hs);
                values.set(head.v(qkv), head.ld_qkv, T_, head.hs);
                T* o = out + head.out_offset;
                for (int q0 = 0; q0 < T_; q0 += Br) {
                    int const rows = std::min(Br, T_ - q0), key_end = q0 + rows;
                    for (int i = 0; i < rows; ++i) std::fill_n(o + (q0 + i) * head.ld_out, head.hs, T(0));
                    std::fill_n(row_max.begin(), rows, -std::numeric_limits<T>::infinity());
                    std::fill_n(row_sum.begin(), rows, T(0));
                    for (int k0 = 0; k0 < key_end; k0 += Bc) {  // key tiles above the diagonal are never visited
                        int const cols = std::min(Bc, key_end - k0);
                        tile_scores<T, In>(S.data(), ld_s, q, keys, head, q0, rows, k0, cols);
                        for (int i = 0; i < rows; ++i) {
                            T* s = S.data() + static_cast<std::int64_t>(i) * ld_s;
                            int const visible = visible_keys(q0 + i, k0, cols);
                            if (visible == 0) {  // a row that sees none of this tile's keys: no probability
                                std::fill_n(s, whole_vectors(cols), T(0));
                                continue;
                            }
                            // Online softmax: the new maximum rescales what this row has summed so far.
                            T const maximum = std::max(row_max[i], head.scale * maximum_of<T>(s, visible, s[0]));
                            T const sum = exponentiate_visible(s, visible, whole_vectors(cols), head.scale, maximum);
                            T const correction = exp_approx(row_max[i] - maximum);
                            row_sum[i] = row_sum[i] * correction + sum;
                            row_max[i] = maximum;
                            if (correction != T(1)) {
                                T* o_row = o + (q0 + i) * head.ld_out;
#pragma omp simd
                                for (int d = 0; d < head.hs; ++d) o_row[d] *= correction;
                            }
                        }
                        // o[q0.., hs] += P[rows,cols] · v[k0.., hs]
                        tile_product<T, In>(false, rows, head.hs, cols,
                                            gemm_input<In>(S.data(), std::int64_t{rows} * ld_s, rounded), ld_s,
                                            values, k0, T(1), o + q0 * head.ld_out, head.ld_out);
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
    int const Br = tiles.queries, Bc = tiles.keys, ld_s = whole_vectors(Bc);
#pragma omp parallel
    {
        // Per thread: a tile of recomputed probabilities P, of their gradients dP (then dS), and each query row's
        // D = dO·O, which equals Σ_j P_ij dP_ij (the softmax backward's row sum) without storing a row of P.
        std::vector<T> P(static_cast<std::size_t>(Br) * ld_s), dP(static_cast<std::size_t>(Br) * ld_s), D(Br);
        std::vector<In> rounded(std::is_same_v<In, T> ? 0 : P.size());
        TransposedHead<In> keys, values;
        HeadRows<In> key_rows, query_rows, dout_rows;
        // The query heads that share a key/value head run on one thread, one after another: they add into the same
        // dk and dv.
        int const group = NH / NKV;
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b) {
            for (int kv = 0; kv < NKV; ++kv) {
                Head<T> const first(b, kv * group, T_, C, NH, NKV);
                keys.set(first.k(qkv), first.ld_qkv, T_, first.hs);
                values.set(first.v(qkv), first.ld_qkv, T_, first.hs);
                key_rows.set(first.k(qkv), first.ld_qkv, T_, first.hs);
                for (int h = kv * group; h < (kv + 1) * group; ++h) {
                    Head<T> const head(b, h, T_, C, NH, NKV);
                    In const* q = head.q(qkv);
                    T *dq = head.q(dqkv), *dk = head.k(dqkv), *dv = head.v(dqkv);
                    T const* o = out + head.out_offset;
                    In const* d_o = dout + head.out_offset;
                    query_rows.set(q, head.ld_qkv, T_, head.hs);
                    dout_rows.set(d_o, head.ld_out, T_, head.hs);
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
                            tile_scores<T, In>(P.data(), ld_s, q, keys, head, q0, rows, k0, cols);
                            int const width = whole_vectors(cols);
                            for (int i = 0; i < rows; ++i) {  // masked keys: no probability, no gradient
                                exponentiate_visible(P.data() + std::int64_t{i} * ld_s, visible_keys(q0 + i, k0, cols),
                                                     width, head.scale, lse_bh[q0 + i]);
                            }
                            // dP = dO[q0..]·v[k0..]ᵀ;  dv[k0..] += Pᵀ·dO[q0..]
                            std::int64_t const tile = std::int64_t{rows} * ld_s;
                            values.times(dP.data(), ld_s, d_o + q0 * head.ld_out, head.ld_out, rows, k0, cols,
                                         head.hs);
                            tile_product<T, In>(true, cols, head.hs, rows, gemm_input<In>(P.data(), tile, rounded),
                                                ld_s, dout_rows, q0, T(1), dv + k0 * ld, ld);
                            for (int i = 0; i < rows; ++i) {  // dS = P ∘ (dP − D) · scale
                                T const* p = P.data() + std::int64_t{i} * ld_s;
                                T* ds = dP.data() + std::int64_t{i} * ld_s;
#pragma omp simd
                                for (int j = 0; j < width; ++j) ds[j] = p[j] * (ds[j] - D[i]) * head.scale;
                            }
                            // dq[q0..] += dS·k[k0..];  dk[k0..] += dSᵀ·q[q0..]
                            In const* ds = gemm_input<In>(dP.data(), tile, rounded);
                            tile_product<T, In>(false, rows, head.hs, cols, ds, ld_s, key_rows, k0, T(1),
                                                dq + q0 * ld, ld);
                            tile_product<T, In>(true, cols, head.hs, rows, ds, ld_s, query_rows, q0, T(1),
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
