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
constexpr int row_multiple = 16;
int whole_vectors(int n) { return (n + row_multiple - 1) / row_multiple * row_multiple; }

// Every operand of a tile product is dense: its rows consecutive, no longer than the product reads. oneDNN 2.6 runs
// a bf16 matmul on AMX tiles only when all three of its matrices are; on any other strides it falls back to its
// AVX-512 kernel (measured on an Intel Xeon with AMX, one core: q·kᵀ for 128 queries × 256 keys × 64 took 19.9 µs
// from qkv in place, 8.1 µs from dense copies; P·v 10.1 against 4.7). For fp32 and double inputs the copies keep a
// tile's rows apart in L1: at the activation's stride (thousands of elements) they fall into a few sets and evict
// each other (P·v at 127 GFLOP/s from qkv, 167 from the copy).

// One head's [T,hs] columns of a row-major buffer (row stride ld), copied to rows of hs.
template <typename In> class HeadRows {
  public:
    void set(In const* columns, std::int64_t ld, int T_, int hs) {
        hs_ = hs;
        copy_.resize(static_cast<std::size_t>(T_) * hs);
        // GCC makes a memcpy of each row of this loop. Rows of 64 bf16 copied inline in 64-byte pieces instead took
        // as long (6% of bf16 attention either way): the time is the strided reads from the activation.
        for (int t = 0; t < T_; ++t) {
            In const* from = columns + t * ld;
            In* to = copy_.data() + std::int64_t{t} * hs;
#pragma omp simd
            for (int d = 0; d < hs; ++d) to[d] = from[d];
        }
    }
    In const* row(int t) const { return copy_.data() + std::int64_t{t} * hs_; }
    std::int64_t ld() const { return hs_; }

  private:
    int hs_ = 0;
    std::vector<In> copy_;  // [T,hs]
};

// One head's keys (or values), [T,hs] at row stride ld, as the products with their transpose read them. The tile
// GEMM wants B row-major, so for fp32 and double inputs they are packed once per head into [hs,T] (the head's tiles
// reuse them T / queries-per-tile times), rows 16 elements longer than T: rows of 1,024 floats, 4 KiB apart, would
// share L1 sets (q·kᵀ at 122 GFLOP/s against 149). oneDNN reads a dense bf16 copy transposed.
template <typename In> class TransposedHead {
  public:
    void set(In const* columns, std::int64_t ld, int T_, int hs) {
        if constexpr (std::is_same_v<In, bfloat16>) {
            rows_.set(columns, ld, T_, hs);
        } else {
            stride_ = whole_vectors(T_) + row_multiple;
            packed_.resize(static_cast<std::size_t>(hs) * stride_);
            transpose(packed_.data(), stride_, columns, ld, T_, hs);
        }
    }
    // C[rows,cols] = A[rows,hs] · (rows k0 ... k0 + cols − 1 of the head)ᵀ (A dense, C row stride ldc)
    template <typename T> void times(T* C, std::int64_t ldc, In const* A, int rows, int k0, int cols, int hs) const {
        if constexpr (std::is_same_v<In, bfloat16>) {
            gemm_bf16(false, true, rows, cols, hs, A, hs, rows_.row(k0), hs, T(0), C, ldc);
        } else {
            tile_gemm<T>(rows, cols, hs, A, hs, 1, packed_.data() + k0, stride_, T(0), C, ldc);
        }
    }

  private:
    HeadRows<In> rows_;        // only for bf16 inputs
    std::int64_t stride_ = 0;  // of packed_
    std::vector<In> packed_;   // [hs,stride]: only for fp32 and double inputs
};

// The A operand of a tile product: a row-major matrix at row stride ld, or its transpose.
template <typename In> struct TileInput {
    In const* values;
    std::int64_t ld;
    bool transposed = false;
    TileInput transpose() const { return {values, ld, !transposed}; }
};

// A tile of probabilities or of their gradients, [rows,cols] in T at row stride ld, as tile products read it: for T
// inputs the tile itself, which tile_gemm reads at any strides; for bf16 its rounding, written dense into `rounded`.
template <typename In, typename T>
TileInput<In> tile_operand(T const* tile, int rows, int cols, std::int64_t ld, std::vector<In>& rounded) {
    if constexpr (std::is_same_v<In, T>) {
        return {tile, ld};
    } else {
        for (int i = 0; i < rows; ++i) {
#pragma omp simd
            for (int j = 0; j < cols; ++j) rounded[std::int64_t{i} * cols + j] = to_bfloat16(tile[i * ld + j]);
        }
        return {rounded.data(), cols};
    }
}

// C[M,N] += op(A)[M,K] · (rows b_row ... b_row + K − 1 of B), C dense ([M,N] at row stride N), fp32 (or double)
// accumulation, on inputs of type In: T itself (the tile GEMM), or bf16 (oneDNN's matmul).
template <typename T, typename In>
void tile_product(int M, int N, int K, TileInput<In> A, HeadRows<In> const& B, int b_row, T* C) {
    if constexpr (std::is_same_v<In, bfloat16>) {
        gemm_bf16(A.transposed, false, M, N, K, A.values, A.ld, B.row(b_row), B.ld(), T(1), C, N);
    } else {
        tile_gemm<T>(M, N, K, A.values, A.transposed ? 1 : A.ld, A.transposed ? A.ld : 1, B.row(b_row), B.ld(), T(1),
                     C, N);
    }
}

// dst[rows, hs] (row stride ld) = acc[rows, hs] (dense)
template <typename T> void store_rows(T* dst, std::int64_t ld, T const* acc, int rows, int hs) {
    for (int i = 0; i < rows; ++i) {
#pragma omp simd
        for (int d = 0; d < hs; ++d) dst[i * ld + d] = acc[std::int64_t{i} * hs + d];
    }
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

// The kernels, on GEMM inputs of type In (T, or bf16 copies of qkv and dout); everything else in T. A tile of
// scores has row stride whole_vectors(cols): the loops over its rows run in whole vectors, and its rows are dense
// for the products wherever cols is a multiple of 16.
template <typename T, typename In>
void fused_attention_forward(T* out, T* lse, In const* qkv, int B, int T_, int C, int NH, int NKV,
                             AttentionTiles tiles) {
    int const Br = tiles.queries, Bc = tiles.keys, hs = C / NH;
#pragma omp parallel
    {
        // One tile of scores (then probabilities), its query rows' output so far (dense) and each query row's
        // running maximum and sum, per thread.
        std::vector<T> S(static_cast<std::size_t>(Br) * whole_vectors(Bc)), o(static_cast<std::size_t>(Br) * hs);
        std::vector<T> row_max(Br), row_sum(Br);
        std::vector<In> rounded(std::is_same_v<In, T> ? 0 : S.size());
        TransposedHead<In> keys;
        HeadRows<In> queries, values;
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                Head<T> const head(b, h, T_, C, NH, NKV);
                queries.set(head.q(qkv), head.ld_qkv, T_, hs);
                keys.set(head.k(qkv), head.ld_qkv, T_, hs);
                values.set(head.v(qkv), head.ld_qkv, T_, hs);
                for (int q0 = 0; q0 < T_; q0 += Br) {
                    int const rows = std::min(Br, T_ - q0), key_end = q0 + rows;
                    std::fill_n(o.begin(), std::int64_t{rows} * hs, T(0));
                    std::fill_n(row_max.begin(), rows, -std::numeric_limits<T>::infinity());
                    std::fill_n(row_sum.begin(), rows, T(0));
                    for (int k0 = 0; k0 < key_end; k0 += Bc) {  // key tiles above the diagonal are never visited
                        int const cols = std::min(Bc, key_end - k0), ld = whole_vectors(cols);
                        // Unscaled scores S = q·kᵀ: the softmax applies 1/sqrt(hs) as it exponentiates.
                        keys.times(S.data(), ld, queries.row(q0), rows, k0, cols, hs);
                        for (int i = 0; i < rows; ++i) {
                            T* s = S.data() + static_cast<std::int64_t>(i) * ld;
                            int const visible = visible_keys(q0 + i, k0, cols);
                            if (visible == 0) {  // a row that sees none of this tile's keys: no probability
                                std::fill_n(s, ld, T(0));
                                continue;
                            }
                            // Online softmax: the new maximum rescales what this row has summed so far.
                            T const maximum = std::max(row_max[i], head.scale * maximum_of<T>(s, visible, s[0]));
                            T const sum = exponentiate_visible(s, visible, ld, head.scale, maximum);
                            T const correction = exp_approx(row_max[i] - maximum);
                            row_sum[i] = row_sum[i] * correction + sum;
                            row_max[i] = maximum;
                            if (correction != T(1)) {
                                T* o_row = o.data() + std::int64_t{i} * hs;
#pragma omp simd
                                for (int d = 0; d < hs; ++d) o_row[d] *= correction;
                            }
                        }
                        // o[rows, hs] += P[rows,cols] · v[k0.., hs]
                        tile_product<T, In>(rows, hs, cols, tile_operand<In>(S.data(), rows, cols, ld, rounded),
                                            values, k0, o.data());
                    }
                    for (int i = 0; i < rows; ++i) {
                        T const inverse = T(1) / row_sum[i];
                        T const* o_row = o.data() + std::int64_t{i} * hs;
                        T* out_row = out + head.out_offset + (q0 + i) * head.ld_out;
#pragma omp simd
                        for (int d = 0; d < hs; ++d) out_row[d] = o_row[d] * inverse;
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
    int const Br = tiles.queries, Bc = tiles.keys, hs = C / NH;
#pragma omp parallel
    {
        // Per thread: a tile of recomputed probabilities P, of their gradients dP (then dS), and each query row's
        // D = dO·O, which equals Σ_j P_ij dP_ij (the softmax backward's row sum) without storing a row of P; a query
        // tile's dq and a key/value head's dk and dv, summed dense and written to dqkv when complete.
        std::vector<T> P(static_cast<std::size_t>(Br) * whole_vectors(Bc)), dP(P.size()), D(Br);
        std::vector<T> dq(static_cast<std::size_t>(Br) * hs), dk(static_cast<std::size_t>(T_) * hs), dv(dk.size());
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
                keys.set(first.k(qkv), first.ld_qkv, T_, hs);
                values.set(first.v(qkv), first.ld_qkv, T_, hs);
                key_rows.set(first.k(qkv), first.ld_qkv, T_, hs);
                std::fill(dk.begin(), dk.end(), T(0));
                std::fill(dv.begin(), dv.end(), T(0));
                for (int h = kv * group; h < (kv + 1) * group; ++h) {
                    Head<T> const head(b, h, T_, C, NH, NKV);
                    T const* o = out + head.out_offset;
                    In const* d_o = dout + head.out_offset;
                    query_rows.set(head.q(qkv), head.ld_qkv, T_, hs);
                    dout_rows.set(d_o, head.ld_out, T_, hs);
                    T const* lse_bh = lse + head.lse_offset;
                    for (int q0 = 0; q0 < T_; q0 += Br) {
                        int const rows = std::min(Br, T_ - q0), key_end = q0 + rows;
                        for (int i = 0; i < rows; ++i) {
                            T const* o_row = o + (q0 + i) * head.ld_out;
                            In const* do_row = d_o + (q0 + i) * head.ld_out;
                            T dot = 0;
#pragma omp simd reduction(+ : dot)
                            for (int d = 0; d < hs; ++d) dot += o_row[d] * static_cast<T>(do_row[d]);
                            D[i] = dot;
                        }
                        std::fill_n(dq.begin(), std::int64_t{rows} * hs, T(0));
                        for (int k0 = 0; k0 < key_end; k0 += Bc) {
                            int const cols = std::min(Bc, key_end - k0), ld = whole_vectors(cols);
                            // Mirror of the forward: P = exp(scale · q·kᵀ − lse), recomputed; then out = P·v.
                            keys.times(P.data(), ld, query_rows.row(q0), rows, k0, cols, hs);
                            for (int i = 0; i < rows; ++i) {  // masked keys: no probability, no gradient
                                exponentiate_visible(P.data() + std::int64_t{i} * ld, visible_keys(q0 + i, k0, cols),
                                                     ld, head.scale, lse_bh[q0 + i]);
                            }
                            // dP = dO[q0..]·v[k0..]ᵀ;  dv[k0..] += Pᵀ·dO[q0..]
                            values.times(dP.data(), ld, dout_rows.row(q0), rows, k0, cols, hs);
                            TileInput<In> const p = tile_operand<In>(P.data(), rows, cols, ld, rounded);
                            tile_product<T, In>(cols, hs, rows, p.transpose(), dout_rows, q0,
                                                dv.data() + std::int64_t{k0} * hs);
                            for (int i = 0; i < rows; ++i) {  // dS = P ∘ (dP − D) · scale
                                T const* p = P.data() + std::int64_t{i} * ld;
                                T* ds = dP.data() + std::int64_t{i} * ld;
#pragma omp simd
                                for (int j = 0; j < ld; ++j) ds[j] = p[j] * (ds[j] - D[i]) * head.scale;
                            }
                            // dq[q0..] += dS·k[k0..];  dk[k0..] += dSᵀ·q[q0..]
                            TileInput<In> const ds = tile_operand<In>(dP.data(), rows, cols, ld, rounded);
                            tile_product<T, In>(rows, hs, cols, ds, key_rows, k0, dq.data());
                            tile_product<T, In>(cols, hs, rows, ds.transpose(), query_rows, q0,
                                                dk.data() + std::int64_t{k0} * hs);
                        }
                        store_rows(head.q(dqkv) + q0 * head.ld_qkv, head.ld_qkv, dq.data(), rows, hs);
                    }
                }
                store_rows(first.k(dqkv), first.ld_qkv, dk.data(), T_, hs);
                store_rows(first.v(dqkv), first.ld_qkv, dv.data(), T_, hs);
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
