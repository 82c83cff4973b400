// The decoder's backward: the LM head's, each layer's (backward_layer, the mirror of decoder_forward.cpp's
// forward_layer, its steps in reverse), the embedding's; the gradients handed to the gradient sync as each layer
// finishes them.
#include "axonn/model/decoder.h"

#include "axonn/core/error.h"
#include "axonn/core/trace.h"
#include "axonn/model/decoder_layout.h"

#include <fmt/format.h>

namespace axonn {

using namespace decoder_layout;

namespace {

// Whether a GEMM writes the gradient in full (the Linears' weights and the tied embedding, whose LM head's GEMM
// writes first); every other gradient is accumulated into by its kernel and must start from zero when the
// backward overwrites.
bool gemm_written(Architecture const& a, int id) {
    DecoderParams const& p = a.params;
    return id == p.head || id == p.qkv || id == p.attn_out || id == p.mlp_in || id == p.mlp_out;
}

// A layer's tensors, in the order the gradient sync reports them once the layer's backward is done.
std::vector<int> layer_params(Architecture const& a) {
    DecoderParams const& p = a.params;
    std::vector<int> ids;
    for (int id : {p.mlp_out, p.mlp_out_bias, p.mlp_norm, p.mlp_norm_bias, p.mlp_in, p.mlp_in_bias, p.attn_out,
                   p.attn_out_bias, p.attn_norm, p.attn_norm_bias, p.qkv, p.qkv_bias}) {
        if (id >= 0) ids.push_back(id);
    }
    return ids;
}

}  // namespace

void Decoder::norm_backward(float* dinp, float const* dout, float const* inp, float const* mean, float const* rstd,
                            int weight, int bias, std::int64_t offset, std::int64_t N) {
    parallel_norm_backward(backend_, grid_, norm_spec(), statistics_.data<double>(), dinp, layer_grad(weight, offset),
                           layer_grad(bias, offset), dout, inp, layer_values(weight, offset), mean, rstd, N);
}

float* Decoder::vocab_block_grad(int which) { return vocab_->gradient(which, grad(vocab_param(which))); }

void Decoder::start_vocab_gradient(int which, GradWrite write) {
    int const id = vocab_param(which);
    vocab_->start_gradient(which, grad(id), layout_.local_numel(id), write);
}

GradWrite Decoder::head_block_write() const {
    // Each vocabulary block's gradient [Vr, Vh] (GPT-2's one for the LM head and the lookup) waits in its
    // block to be reduce-scattered over Z at the end; without a Z split it is the shard itself.
    return grid_.shape().z > 1 || pass_.first ? GradWrite::overwrite : GradWrite::accumulate;
}

GemmInput Decoder::logits_gradient(Batch const& batch) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    VocabSlice const vocab = vocab_slice();
    // The logits buffer becomes dlogits in place (the logits are not needed again), or in mixed precision dlogits
    // goes straight to its bf16 rounding, which the GEMMs read.
    float* logits = activation(a.logits);  // [BT, Vr]
    return backend_.cross_entropy_backward(logits, logits, activation(a.logsumexp), batch.targets,
                                           activation(a.dlosses), d.BT, vocab.valid, vocab.rows, vocab.begin);
}

void Decoder::head_backward(Batch const& batch, GemmInput dlogits, std::int64_t first, std::int64_t rows,
                            GradWrite write) {
    TraceSpan const span("LM head backward", TraceTrack::steps);
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    VocabSlice const vocab = vocab_slice();
    float* scratch = activation_grads_.data<float>();
    float* d_norm = scratch + a.d_norm + first * d.Cx;  // [rows, C/Gx] final_norm's gradient
    // [rows, Vh] the head's input: final_norm's rows, or (vocabulary over X·Y) their gathered whole, which the
    // input gradient's X blocks overwrite once the weight gradient has read them.
    float* head_input =
        d.vocab_over_x() ? activation(a.head_input) + first * d.C : activation(a.final_norm) + first * d.Cx;
    int const head_block = vocab_blocks(arch_) - 1;
    // The head's weight gradient waits in its block (for the lookup's, when tied), and is reduce-scattered at the
    // end.
    float* d_head_input = d.vocab_over_x() ? scratch + a.d_head_input + first * d.C : nullptr;  // [rows, C]
    vocab_parallel_head_input_gradient(k, linear_groups(false), options_.overlap, vocab, d_norm, d_head_input,
                                       head_input, dlogits, gathered_vocab_block(head_block), rows,
                                       [&](GemmInput gemm_dlogits) {
                                           k.linear_backward_weight(vocab_block_grad(head_block), nullptr,
                                                                    gemm_dlogits, head_input, rows, d.Vh, d.Vr, write);
                                       });
}

// head_forward's, forward_layer's and embed's steps in reverse (decoder_forward.cpp).
void Decoder::backward() {
    TraceSpan const span("backward", TraceTrack::steps);
    AXONN_INVARIANT(backward_ready_, "backward() needs a train_forward() first");
    backward_ready_ = false;
    GradWrite const write = pass_.first ? GradWrite::overwrite : GradWrite::accumulate;
    if (write == GradWrite::overwrite) {
        for (int id = 0; id < layout_.count(); ++id) {
            if (!gemm_written(arch_, id)) backend_.zero(grad(id), layout_.local_numel(id) * sizeof(float));
        }
    }
    if (pass_.last) step_->sync.begin(gradients_.data<float>());
    Batch const& batch = last_batch_;
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    head_and_final_norm_backward(write);
    bool const recompute = options_.recompute == Recompute::layer;
    std::vector<int> const per_layer_params = layer_params(arch_);
    for (int l = d.L - 1; l >= 0; --l) {
        TraceSpan const layer(TraceTrack::steps, [&] { return fmt::format("layer {}", l); });
        if (recompute) {
            TraceSpan const recomputation("recompute", TraceTrack::steps);
            forward_layer(l, 0, batch);
        }
        backward_layer(l, recompute ? 0 : l, batch, write);
        if (!pass_.last) continue;
        std::vector<GradSlice> slices;
        for (int id : per_layer_params) slices.push_back({id, l});
        step_->sync.final(slices);
    }
    embedding_backward(write);
}

void Decoder::head_and_final_norm_backward(GradWrite write) {
    Batch const& batch = last_batch_;
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    DecoderParams const& p = arch_.params;
    float* scratch = activation_grads_.data<float>();
    float* d_output = scratch + a.d_output;  // [B,T,C/Gx] gradient of the last layer's output
    float* d_norm = scratch + a.d_norm;      // [B,T,C/Gx] final_norm's
    // An untied embedding's block only gathers the lookup's sums: it starts from zero.
    if (!arch_.tied_head && grid_.shape().z > 1) {
        backend_.zero(vocab_block_grad(0), vocab_block(d) * static_cast<std::int64_t>(sizeof(float)));
    }
    if (!head_backward_in_forward_) head_backward(batch, logits_gradient(batch), 0, d.BT, head_block_write());
    // An untied LM head's gradient is complete: its Z reduce-scatter runs under the layers' backward. A tied
    // one's waits for the lookup's gradient, the backward's last computation.
    if (!arch_.tied_head) start_vocab_gradient(1, write);
    backend_.zero(d_output, d.BT * d.Cx * static_cast<std::int64_t>(sizeof(float)));
    norm_backward(d_output, d_norm, activation(a.outputs + (d.L - 1) * a.BTCx), activation(a.final_norm_mean),
                  activation(a.final_norm_rstd), p.final_norm, p.final_norm_bias, 0, d.BT);
    if (!pass_.last) return;
    std::vector<GradSlice> final_norm_slices = {{p.final_norm}};
    if (p.final_norm_bias >= 0) final_norm_slices.push_back({p.final_norm_bias});
    step_->sync.final(final_norm_slices);
}

void Decoder::embedding_backward(GradWrite write) {
    Batch const& batch = last_batch_;
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    DecoderParams const& p = arch_.params;
    float const* d_input = activation_grads_.data<float>() + a.d_output;  // [B,T,C/Gx] the first layer's input's
    // The lookup's gradient: the rows of this rank's vocabulary slice; GPT-2's wpe's on every rank (replicated
    // over Y).
    float* dwpe = p.positions >= 0 ? grad(p.positions) : nullptr;
    vocab_parallel_embedding_backward(backend_, grid_, vocab_slice(), vocab_block_grad(0), dwpe, d_input,
                                      vocab_scratch(), batch.tokens, d.B, d.T);
    // The last gradients to finish; what remains (their data sums, the norm) needs them, so they are waited on at
    // once. The untied head's ran under the layers' backward.
    if (!arch_.tied_head) vocab_->finish_gradient(1);
    start_vocab_gradient(0, write);
    vocab_->finish_gradient(0);
    if (!pass_.last) {
        step_->weight_grads.complete_all();
        return;
    }
    std::vector<GradSlice> edges = {{p.embed}};
    if (p.positions >= 0) edges.push_back({p.positions});
    if (!arch_.tied_head) edges.push_back({p.head});
    step_->sync.final(edges);
    step_->sync.finish();
    replicated_rows_->sum(gradients_.data<float>());
}

// forward_layer's steps in reverse (decoder_forward.cpp): the MLP branch's backward, then attention's. Each
// residual add hands its output's gradient to both of its inputs, so no kernel copies it: the branch's output
// Linear reads it in d_output, then the branch's norm adds its input gradient to it there, which makes d_output
// the skip input's whole gradient (the next branch's sum's, then the layer input's).
void Decoder::backward_layer(int l, int slot, Batch const& batch, GradWrite write) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    DecoderParams const& p = arch_.params;
    LinearGroups const normal = linear_groups(false), transposed = linear_groups(true);
    GradScatter& scatter = step_->weight_grads;
    bool const overlap = options_.overlap;
    float* scratch = activation_grads_.data<float>();
    float* d_output = scratch + a.d_output;  // [B,T,C/Gx] the output's gradient, attn_residual's, then the input's
    float* d_norm = scratch + a.d_norm;      // [B,T,C/Gx] mlp_norm's, then attn_norm's
    float* d_mlp_act = scratch + a.d_mlp_act;              // [B,T,Fy]
    float* d_mlp_hidden = scratch + a.d_mlp_hidden;        // [B,T,Uy]
    float* d_attn = scratch + a.d_attn;                    // [B,T,C/Gy]
    float* d_qkv = scratch + a.d_qkv;                      // [B,T,Wy]
    LayerActivations const act(activations_.data<float>(), bf16_activations_.data<bfloat16>(), a, l, slot, d.T);
    LayerOffsets const at(l, d);
    auto weight_grad = [&](int id) { return grad(id) + l * (layout_.local_numel(id) / d.L); };

    // MLP branch, from output = attn_residual + mlp_out(activation(mlp_in(mlp_norm(attn_residual))))
    parallel_linear_backward(k, transposed, scatter, overlap, d_mlp_act, weight_grad(p.mlp_out),
                             layer_grad(p.mlp_out_bias, at.Cx), k.gemm_input(d_output, d.BT * d.Cx),
                             act.mlp_act.as_input(), step_->weights.next(), d.BT, d.Fy, d.Cx, write);
    // GELU's pass sums its Linear's bias gradient (the forward added the bias there).
    float* mlp_in_dbias = layer_grad(p.mlp_in_bias, at.Uy);
    GemmInput const d_hidden =
        mlp_activation_backward(d_mlp_hidden, arch_.gelu ? mlp_in_dbias : nullptr, act.mlp_hidden, d_mlp_act, d);
    parallel_linear_backward(k, normal, scatter, overlap, d_norm, weight_grad(p.mlp_in),
                             arch_.gelu ? nullptr : mlp_in_dbias, d_hidden, act.mlp_norm.as_input(),
                             step_->weights.next(), d.BT, d.Cx, d.Uy, write);
    norm_backward(d_output, d_norm, act.attn_residual, act.mlp_norm_mean, act.mlp_norm_rstd, p.mlp_norm,
                  p.mlp_norm_bias, at.Cx, d.BT);

    // attention branch, from attn_residual = input + attn_out(attention(rope(qkv(attn_norm(input)))))
    parallel_linear_backward(k, transposed, scatter, overlap, d_attn, weight_grad(p.attn_out),
                             layer_grad(p.attn_out_bias, at.Cx), k.gemm_input(d_output, d.BT * d.Cx),
                             act.attn.as_input(), step_->weights.next(), d.BT, d.Cy, d.Cx, write);
    k.attention_backward(d_qkv, d_attn, act.qkv.as_input(), widened(act.attn, d.BT * d.Cy), act.attn_lse, d.B, d.T,
                         d.Cy, d.NHy, d.NKVy);
    rotate_positions(d_qkv, d, 0, -1);  // the rotation's gradient: the rotation back
    parallel_linear_backward(k, normal, scatter, overlap, d_norm, weight_grad(p.qkv), layer_grad(p.qkv_bias, at.Wy),
                             k.gemm_input(d_qkv, d.BT * d.Wy), act.attn_norm.as_input(), step_->weights.next(), d.BT,
                             d.Cx, d.Wy, write);
    norm_backward(d_output, d_norm, act.input, act.attn_norm_mean, act.attn_norm_rstd, p.attn_norm, p.attn_norm_bias,
                  at.Cx, d.BT);
}

float* Decoder::widened(KeptActivation const& activation, std::int64_t n) {
    if (activation.rounded != nullptr) {
        backend_.convert(activation.values, DType::f32, activation.rounded, DType::bf16, n);
    }
    return activation.values;
}

GemmInput Decoder::mlp_activation_backward(float* dinp, float* dbias, KeptActivation const& inp, float const* dout,
                                           LocalDims const& d) {
    if (arch_.gelu) return backend_.gelu_bias_backward(dinp, dbias, inp.held(), dout, d.BT, d.Fy);
    AXONN_INVARIANT(dbias == nullptr, "SwiGLU's bias gradient is its Linear's");
    backend_.swiglu_backward(dinp, inp.held(), dout, d.BT, d.Fy);
    return backend_.gemm_input(dinp, d.BT * d.Uy);
}

}  // namespace axonn
