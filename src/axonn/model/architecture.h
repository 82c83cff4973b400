// What the decoder (model/gpt.h) needs to know of a model family: its shape, the kind of each of its layers, and
// where each of its tensors is in its parameter declarations. GPT-2 (LayerNorm, GELU, learned positions, biases,
// an LM head tied to the embedding) and Llama (RMSNorm, SwiGLU, rotary positions, grouped-query attention, no
// biases, an untied head) are two settings of it; every other part of the model code is shared.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/parallel/param_decl.h"

#include <cstdint>
#include <string>
#include <vector>

namespace axonn {

// Indices into the declarations; -1 where the family has no such tensor.
struct DecoderParams {
    int embed = -1, positions = -1, head = -1;  // head == embed when the LM head is tied
    // Each layer: a norm before attention, the [q | k | v] projection, attention's output projection; a norm
    // before the MLP, its first Linear (GPT-2's fc, Llama's gate and up in one) and its second (the projection
    // back). A weight has the slot's name, its bias the name with _bias.
    int attn_norm = -1, attn_norm_bias = -1, qkv = -1, qkv_bias = -1, attn_out = -1, attn_out_bias = -1;
    int mlp_norm = -1, mlp_norm_bias = -1, mlp_in = -1, mlp_in_bias = -1, mlp_out = -1, mlp_out_bias = -1;
    int final_norm = -1, final_norm_bias = -1;
};

struct Architecture {
    std::string family;      // "gpt2" or "llama"
    int layers = 0;          // L
    int width = 0;           // C
    int heads = 0;           // NH
    int kv_heads = 0;        // NKV (= NH but for grouped-query attention)
    int mlp_width = 0;       // F: the MLP's hidden width (4C for GPT-2)
    int vocab_size = 0;      // V
    int padded_vocab = 0;    // Vp
    int context = 0;         // the longest sequence
    double norm_eps = 1e-5;
    bool layernorm = true;   // LayerNorm with a bias; else RMSNorm
    bool gelu = true;        // MLP: gelu(fc(x)); else silu(gate(x)) · up(x), gate and up one Linear of 2F rows
    bool tied_head = true;   // the LM head is the embedding
    std::vector<double> rope_inv_freq;  // rotary positions' frequencies; empty: learned positions
    DecoderParams params;
    std::vector<ParamDecl> declarations;
    // How the embedding and the LM head split their vocabulary: the families declare AxoNN's (y); a run lays
    // it out as it chooses (with_vocab_split).
    VocabSplit vocab_split = VocabSplit::y;

    int head_size() const { return width / heads; }
    // The rows of the MLP's first Linear: F, or gate and up's 2F.
    int mlp_rows() const { return gelu ? mlp_width : 2 * mlp_width; }
    // A layer's Linear weights in the order the forward uses them.
    std::vector<int> layer_linears() const { return {params.qkv, params.attn_out, params.mlp_in, params.mlp_out}; }
    // Trainable parameters, the vocabulary's padding rows excluded.
    std::int64_t parameter_count() const;
    // Model FLOPs per token of one training step: 6·N + 6·L·C·T (llm.c's and PaLM's accounting).
    double model_flops_per_token(int seq) const;
    // Hardware FLOPs of one training step of B sequences of s tokens as Megatron-LM and AxoNN count them: every
    // GEMM of the layers 3 times (forward and the backward's two; 4 with the forward recomputed) with attention's
    // full s×s scores, and the LM head's 3 times. For GPT-2 it is their 72·B·s·l·h²·(1 + s/6h + V/12lh), and
    // 96·B·s·l·h²·(1 + s/6h + V/16lh) recomputing (V the padded vocabulary the GEMMs compute).
    double hardware_flops_per_step(int batch, int seq, bool recompute) const;
    // The same model with its vocabulary laid out by `split` for a run on `grid` whose GEMMs take `precision`
    // (which decide the automatic split: resolved_vocab_split, parallel/vocab_parallel.h; where the layout it
    // prefers does not fit the grid and the other does, the other).
    Architecture with_vocab_split(VocabSplit split, GridShape const& grid, DType precision) const;
};

}  // namespace axonn
