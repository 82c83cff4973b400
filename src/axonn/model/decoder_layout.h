// How a decoder lays out its activations and workspaces on one rank: this rank's share of the model's dimensions,
// the offsets of every activation buffer, and the sizes of the buffers the parallel layers need. The decoder
// (decoder.h) allocates by these numbers and its memory model (decoder_memory.h) counts them, so the two agree.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/kernels/attention_plan.h"
#include "axonn/kernels/types.h"
#include "axonn/model/architecture.h"
#include "axonn/model/decoder_options.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/parallel/vocab_parallel.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace axonn::decoder_layout {

// This process's share of the model's dimensions.
// The vocabulary's: Vr rows of Vh columns, the LM head's input width (vocab_block_shape): [Vp/G_y, C/G_x] split
// over Y, [Vp/(G_x·G_y), C] over the X·Y plane.
struct LocalDims {
    int B, T, C, Cx, Cy, NHy, NKVy, hs, Wy, Uy, Fy, L, Vr, Vh;
    std::int64_t BT;
    bool gelu;  // GELU's input gradient can overwrite its output gradient (SwiGLU's is twice as wide)

    LocalDims(Architecture const& a, GridShape const& grid, int B_, int T_)
        : LocalDims(a, grid, B_, T_, vocab_block_shape(grid, a.vocab_split, a.padded_vocab, a.width)) {}
    // Whether the vocabulary's rows split over the X·Y plane with a token's whole hidden state on every X rank.
    bool vocab_over_x() const { return Vh == C && Cx < C; }

private:
    LocalDims(Architecture const& a, GridShape const& grid, int B_, int T_, VocabBlockShape vocab)
        : B(B_), T(T_), C(a.width), Cx(a.width / grid.x), Cy(a.width / grid.y), NHy(a.heads / grid.y),
          NKVy(std::max(1, a.kv_heads / grid.y)), hs(a.head_size()), Wy((NHy + 2 * NKVy) * hs),
          Uy(a.mlp_rows() / grid.y), Fy(a.mlp_width / grid.y), L(a.layers), Vr(vocab.rows), Vh(vocab.width),
          BT(static_cast<std::int64_t>(B_) * T_), gelu(a.gelu) {}
};

// Where layer l's slice of a stacked per-layer vector begins: a norm's or an output Linear's bias (C/G_x per
// layer), the [q | k | v] bias (Wy), the MLP's first bias (Uy).
struct LayerOffsets {
    std::int64_t Cx, Wy, Uy;
    LayerOffsets(int l, LocalDims const& d)
        : Cx(std::int64_t{l} * d.Cx), Wy(std::int64_t{l} * d.Wy), Uy(std::int64_t{l} * d.Uy) {}
};

// Every buffer size below is computed in 64 bits; a model, batch and sequence whose activations would not fit
// are refused before anything is computed.
inline void require_sizes_fit(LocalDims const& d) {
    long double const per_layer =
        static_cast<long double>(d.BT) * (16.0L * d.Cx + 2.0L * d.Wy + d.Cy + 3.0L * d.Uy + 2.0L * d.Fy + 8.0L + d.NHy);
    long double const elements =
        d.L * per_layer + static_cast<long double>(d.BT) * (d.Vr + 4.0L * d.Cx + 2.0L * d.Vh + 8.0L);
    AXONN_REQUIRE(elements < 0x1p62L,
                  "{} sequences of {} tokens of this model need about {:.3g} activation values per "
                  "rank, beyond what any machine holds: lower --batch or --seq, or use more ranks",
                  d.B, d.T, static_cast<double>(elements));
}

// How many copies of a layer's inner activations are kept: one per layer, or (recomputing) one for the layer
// being recomputed. A layer's output is always kept: it is the next layer's input.
inline int activation_slots(LocalDims const& d, Recompute recompute) { return recompute == Recompute::layer ? 1 : d.L; }

// The token rows whose logits are held at once: a chunk's (DecoderOptions::logit_rows), or every row's.
inline std::int64_t logit_rows_held(LocalDims const& d, DecoderOptions const& options) {
    return options.logit_rows > 0 ? std::min<std::int64_t>(d.BT, options.logit_rows) : d.BT;
}

// Offsets (in floats) of every activation buffer, for batches of up to maxB × maxT local rows. Per-layer buffers
// are stacked: slot s's copy starts at offset + s · stride. The backward's scratch lives in a second buffer.
// In mixed precision the activations that only GEMMs read, the norms' outputs and the MLP's activation, live in a
// third, of bf16 (offsets in bf16 elements): the GEMMs would round them to bf16 anyway, so holding only their
// rounding computes the same for half their memory. So does [q | k | v] where attention runs its tile GEMMs in
// bf16 (attention_plan): the Linear writes it to one fp32 staging buffer, and each layer keeps its rounding.
// Attention's output and the MLP's pre-activation are kept rounded too, though their backward is not only GEMMs:
// the forward's kernels read their fp32 values in the staging buffer, and the backward reads the rounding widened
// there (PyTorch's autocast, whose Linears and attention output bf16, keeps the same).
// Widths: Wy a token's [q | k | v] of this rank's heads, Uy the MLP's first Linear's rows here (F/G_y, or gate and
// up's 2F/G_y), Fy the MLP's hidden width here.
struct ActivationLayout {
    std::int64_t BTCx, BTWy, BTCy, BTUy, BTFy, BT, BNHyT;  // per-layer strides
    bool operands_in_bf16;  // attn_norm, attn, mlp_norm, mlp_hidden and mlp_act are offsets into the bf16 buffer
    bool qkv_in_bf16;       // qkv is the staging buffer; qkv_kept, each slot's [q | k | v], is in the bf16 buffer
    std::int64_t qkv_kept, qkv_kept_stride;
    // In mixed precision: [B,T,max(Wy,Cy,Uy)], where the kernels write what a layer keeps rounded (qkv_kept,
    // attn and mlp_hidden, in the bf16 buffer then), and where the backward widens attn and mlp_hidden.
    std::int64_t staging;
    std::int64_t encoded, outputs, attn_norm, attn_norm_mean, attn_norm_rstd, qkv, attn, attn_lse, attn_residual,
        mlp_norm, mlp_norm_mean, mlp_norm_rstd, mlp_hidden, mlp_act, final_norm, final_norm_mean, final_norm_rstd,
        head_input, logits, losses, logsumexp, row_max, dlosses, total;
    // backward scratch, reused by every layer
    std::int64_t d_output, d_norm, d_mlp_act, d_mlp_hidden, d_attn, d_qkv, d_head_input, grad_total;
    std::int64_t bf16_total;  // the bf16 buffer's elements (0 in fp32)

    ActivationLayout(LocalDims const& d, DecoderOptions const& options) {
        BT = d.BT;
        BTCx = BT * d.Cx;
        BTCy = BT * d.Cy;
        BTWy = BT * d.Wy;
        BTUy = BT * d.Uy;
        BTFy = BT * d.Fy;
        BNHyT = BT * d.NHy;
        std::int64_t const L = d.L, S = activation_slots(d, options.recompute);
        std::int64_t next = 0, next_bf16 = 0;
        auto take = [&next](std::int64_t size) { return std::exchange(next, next + size); };
        operands_in_bf16 = options.precision == DType::bf16;
        auto take_operand = [&](std::int64_t size) {
            return operands_in_bf16 ? std::exchange(next_bf16, next_bf16 + size) : take(size);
        };
        // First in the bf16 buffer, at an even offset and stride: a shorter batch whose attention runs in fp32 (one
        // bf16 query tile or less) keeps its fp32 [q | k | v] in a slot's bytes.
        AttentionPlan const attention = attention_plan(options.precision, d.T);
        qkv_in_bf16 = operands_in_bf16 && attention.in_bf16;
        std::int64_t const fp32_rows = static_cast<std::int64_t>(d.B) * std::min(d.T, attention.query_tile);
        qkv_kept_stride = qkv_in_bf16 ? (std::max(BTWy, 2 * fp32_rows * d.Wy) + 1) / 2 * 2 : 0;
        qkv_kept = take_operand(qkv_in_bf16 ? S * qkv_kept_stride : 0);
        staging = take(operands_in_bf16 ? std::max({qkv_in_bf16 ? BTWy : 0, BTCy, BTUy}) : 0);
        encoded = take(BTCx);
        outputs = take(L * BTCx);  // layer l's output, attn_residual + the MLP's projection: layer l + 1's input
        attn_norm = take_operand(S * BTCx);
        attn_norm_mean = take(S * BT);
        attn_norm_rstd = take(S * BT);
        qkv = qkv_in_bf16 ? staging : take(S * BTWy);
        attn = take_operand(S * BTCy);
        attn_lse = take(S * BNHyT);
        attn_residual = take(S * BTCx);  // the layer's input + attention's projection
        mlp_norm = take_operand(S * BTCx);
        mlp_norm_mean = take(S * BT);
        mlp_norm_rstd = take(S * BT);
        mlp_hidden = take_operand(S * BTUy);
        mlp_act = take_operand(S * BTFy);
        final_norm = take(BTCx);
        final_norm_mean = take(BT);
        final_norm_rstd = take(BT);
        // With the vocabulary over the X·Y plane: final_norm gathered over X, [B,T,C], for the LM head's GEMMs.
        head_input = take(d.vocab_over_x() ? BT * d.C : 0);
        logits = take(logit_rows_held(d, options) * d.Vr);  // one chunk's
        losses = take(BT);
        logsumexp = take(BT);
        row_max = take(BT);
        dlosses = take(BT);
        total = next;
        bf16_total = next_bf16;

        next = 0;
        d_output = take(BTCx);  // a residual sum's gradient, read in place by both of its inputs' backward
        d_norm = take(BTCx);
        d_mlp_act = take(BTFy);
        d_mlp_hidden = d.gelu ? d_mlp_act : take(BTUy);  // GELU's gradient, written element by element over its input
        d_attn = take(BTCy);
        d_qkv = take(BTWy);
        // With the vocabulary over the X·Y plane, [B,T,C]: the LM head's input gradient before its reduce-scatter
        // over X; the lookup's sums before theirs (forward), and its gathered output gradient (backward).
        d_head_input = take(d.vocab_over_x() ? BT * d.C : 0);
        grad_total = next;
    }

    // Whether a batch of T tokens keeps each layer's [q | k | v] in bf16 alone: its attention runs in bf16.
    bool keeps_qkv_rounded(int T) const { return qkv_in_bf16 && attention_plan(DType::bf16, T).in_bf16; }
};

// An activation a kernel writes in fp32 that a layer keeps for the backward: in place, or (mixed precision) as its
// bf16 rounding alone, the fp32 values written to the staging buffer first (ActivationLayout).
struct KeptActivation {
    float* values;      // where it is written, and read in fp32
    bfloat16* rounded;  // its rounding, kept in the layer's slot; null: the values are kept

    // As a GEMM reads it: the kept rounding is what a bf16 GEMM would round the values to.
    GemmInput as_input() const { return rounded != nullptr ? GemmInput(nullptr, rounded) : GemmInput(values); }
    // As a kernel reads it that widens a kept rounding in registers (the MLP activations' backward).
    HeldInput held() const { return rounded != nullptr ? HeldInput(rounded) : HeldInput(values); }
};

// One layer's activations: its input (the previous layer's output, or the embedding), the slot of its inner
// buffers, and its output. Those only GEMMs read, [q | k | v], attention's output and the MLP's pre-activation
// are fp32, or bf16 in mixed precision (ActivationLayout).
struct LayerActivations {
    float* input;           // [B,T,C/Gx]
    OperandOut attn_norm;   // [B,T,C/Gx]
    float* attn_norm_mean;  // [B,T] (LayerNorm only)
    float* attn_norm_rstd;  // [B,T]
    KeptActivation qkv;     // [B,T,Wy]: this rank's heads' [q | k | v], rotated (Llama)
    KeptActivation attn;    // [B,T,C/Gy]
    float* attn_lse;        // [B,NH/Gy,T]: each attention row's log-sum-exp
    float* attn_residual;   // [B,T,C/Gx]: input + attention's projection, which the projection writes first
    OperandOut mlp_norm;    // [B,T,C/Gx]
    float* mlp_norm_mean;   // [B,T] (LayerNorm only)
    float* mlp_norm_rstd;   // [B,T]
    KeptActivation mlp_hidden;  // [B,T,Uy]: the MLP's first Linear's output, GELU's with its bias added
    OperandOut mlp_act;     // [B,T,Fy]: its activation (gelu, or silu(gate)·up)
    float* output;          // [B,T,C/Gx]: attn_residual + the MLP's projection, which the projection writes first

    // A batch of T tokens' activations.
    LayerActivations(float* base, bfloat16* bf16_base, ActivationLayout const& a, int l, int slot, int T)
        : input(base + (l == 0 ? a.encoded : a.outputs + (l - 1) * a.BTCx)),
          attn_norm(operand(base, bf16_base, a, a.attn_norm + slot * a.BTCx)),
          attn_norm_mean(base + a.attn_norm_mean + slot * a.BT),
          attn_norm_rstd(base + a.attn_norm_rstd + slot * a.BT),
          qkv{qkv_buffer(base, bf16_base, a, slot, T),
              a.keeps_qkv_rounded(T) ? bf16_base + a.qkv_kept + slot * a.qkv_kept_stride : nullptr},
          attn(kept(base, bf16_base, a, a.attn + slot * a.BTCy)), attn_lse(base + a.attn_lse + slot * a.BNHyT),
          attn_residual(base + a.attn_residual + slot * a.BTCx),
          mlp_norm(operand(base, bf16_base, a, a.mlp_norm + slot * a.BTCx)),
          mlp_norm_mean(base + a.mlp_norm_mean + slot * a.BT), mlp_norm_rstd(base + a.mlp_norm_rstd + slot * a.BT),
          mlp_hidden(kept(base, bf16_base, a, a.mlp_hidden + slot * a.BTUy)),
          mlp_act(operand(base, bf16_base, a, a.mlp_act + slot * a.BTFy)), output(base + a.outputs + l * a.BTCx) {}

private:
    static OperandOut operand(float* base, bfloat16* bf16_base, ActivationLayout const& a, std::int64_t offset) {
        return a.operands_in_bf16 ? OperandOut(bf16_base + offset) : OperandOut(base + offset);
    }
    static KeptActivation kept(float* base, bfloat16* bf16_base, ActivationLayout const& a, std::int64_t offset) {
        return a.operands_in_bf16 ? KeptActivation{base + a.staging, bf16_base + offset}
                                  : KeptActivation{base + offset, nullptr};
    }
    // Where the Linear writes [q | k | v]: the slot's; the staging buffer when the slot keeps its rounding; or,
    // for a batch whose attention runs in fp32 in a model that keeps qkv rounded, the slot's bytes (which hold its
    // fp32 values: ActivationLayout sizes them so).
    static float* qkv_buffer(float* base, bfloat16* bf16_base, ActivationLayout const& a, int slot, int T) {
        if (!a.qkv_in_bf16) return base + a.qkv + slot * a.BTWy;
        if (a.keeps_qkv_rounded(T)) return base + a.staging;
        return reinterpret_cast<float*>(bf16_base + a.qkv_kept + slot * a.qkv_kept_stride);
    }
};

// A Linear's [rows/G_rows, cols/G_cols] block before the Z split: what its Z all-gather returns.
inline std::int64_t linear_block(ShardLayout const& layout, int id) {
    return layout.block_rows(id) * layout.block_cols(id);
}
// The largest Linear block a Z all-gather or reduce-scatter carries, and all four of a layer.
inline std::int64_t max_linear_block(ShardLayout const& layout, Architecture const& a) {
    std::int64_t largest = 0;
    for (int id : a.layer_linears()) largest = std::max(largest, linear_block(layout, id));
    return largest;
}

inline std::int64_t layer_linear_blocks(ShardLayout const& layout, Architecture const& a) {
    std::int64_t total = 0;
    for (int id : a.layer_linears()) total += linear_block(layout, id);
    return total;
}
inline std::int64_t vocab_block(LocalDims const& d) { return static_cast<std::int64_t>(d.Vr) * d.Vh; }
// The vocabulary blocks: the embedding's, and an untied LM head's.
inline int vocab_blocks(Architecture const& a) { return a.tied_head ? 1 : 2; }

// The largest output or input gradient a Linear has here: a chunk of the logits, or a layer's Linears' outputs and
// inputs.
inline std::int64_t largest_linear_output(LocalDims const& d, DecoderOptions const& options) {
    return std::max(logit_rows_held(d, options) * d.Vr, d.BT * std::max<std::int64_t>({d.Wy, d.Uy, d.Fy, d.Cx}));
}

// The staging buffer of the Linears' all-reduces in mixed precision (parallel/linear.h): the largest output or
// input gradient a tensor-parallel group sums; none without a split of X or Y.
inline std::int64_t bf16_staging_numel(LocalDims const& d, GridShape const& grid, DecoderOptions const& options) {
    if (options.precision != DType::bf16 || (grid.x == 1 && grid.y == 1)) return 0;
    return largest_linear_output(d, options);
}

// The backend's bf16 copies of fp32 activation operands, in mixed precision: a backward's dout, held for its two
// GEMMs (the LM head's dlogits the largest); a forward's inp; the weight gradient's inp or attention's dout. The
// inputs it rounds are attention's output and the LM head's: the norms' outputs, the MLP's activation and, where
// attention runs in bf16, its [q | k | v] are held in bf16 already (generation's prompt chunks round their
// [q | k | v] in the backend, beyond this count).
inline std::int64_t bf16_operand_numel(LocalDims const& d, DecoderOptions const& options) {
    if (options.precision != DType::bf16) return 0;
    std::int64_t const widest_input = std::max<std::int64_t>(d.Cy, d.Vh);
    return largest_linear_output(d, options) + 2 * d.BT * widest_input;
}
inline std::int64_t cached_weight_numel(LocalDims const& d, ShardLayout const& layout, Architecture const& a,
                                        DecoderOptions const& options) {
    return options.cache_weights ? d.L * layer_linear_blocks(layout, a) : 0;
}

// A ring of one layer's four Linears: a weight gradient's reduce-scatter has a layer's backward to finish in.
constexpr int scatter_ring = 4;

}  // namespace axonn::decoder_layout
