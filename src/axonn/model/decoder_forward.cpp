// The decoder's forward: the embedding, each layer (forward_layer, the mirror of decoder_backward.cpp's
// backward_layer), the final norm, the LM head and its loss; and the loss weights that normalise a step.
#include "axonn/model/decoder.h"

#include "axonn/core/error.h"
#include "axonn/core/trace.h"
#include "axonn/model/decoder_layout.h"
#include "axonn/parallel/batch_sum.h"

#include <fmt/format.h>

#include <array>
#include <limits>

namespace axonn {

using namespace decoder_layout;

namespace {

// A token's loss weight: its mask value, 1 without a mask, 0 if its target is ignored.
double token_weight(Batch const& batch, std::int64_t i) {
    return batch.targets[i] < 0 ? 0.0 : (batch.loss_mask ? batch.loss_mask[i] : 1.0);
}

// A float per token of the batch, in bytes.
std::int64_t per_token_bytes(Batch const& batch) {
    return static_cast<std::int64_t>(batch.B) * batch.T * static_cast<std::int64_t>(sizeof(float));
}

// Each token's share of the pass's loss: its weight over the total (none when nothing counts).
void share_of_loss(Batch const& batch, float* dlosses, double total) {
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(batch.B) * batch.T; ++i) {
        dlosses[i] = total > 0.0 ? static_cast<float>(token_weight(batch, i) / total) : 0.0f;
    }
}

}  // namespace

double Decoder::global_loss_weight(std::span<Batch const> passes) {
    double total = 0.0;
    for (Batch const& batch : passes) {
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(batch.B) * batch.T; ++i) {
            total += token_weight(batch, i);
        }
    }
    return sum_over_batch(grid_, total);
}

float Decoder::forward(Batch const& batch, double loss_weight_total) {
    return run_forward(batch, false, loss_weight_total);
}

void Decoder::forward_cached(Batch const& batch, KvCache& cache) {
    AXONN_INVARIANT(batch.B == cache.batch() && cache.length() + batch.T <= cache.capacity(),
                    "{} rows of {} tokens after position {} of a cache of {} rows of {}", batch.B, batch.T,
                    cache.length(), cache.batch(), cache.capacity());
    run_forward(Batch{batch.B, batch.T, batch.tokens, nullptr, nullptr}, false, 0.0, &cache);
    cache.advance(batch.T);
}

float Decoder::train_forward(Batch const& batch, Pass const& pass) {
    AXONN_INVARIANT(batch.targets != nullptr, "a training pass needs targets");
    pass_ = pass;
    return run_forward(batch, true, pass.loss_weight_total);
}

void Decoder::norm_forward(OperandOut out, float* mean, float* rstd, float const* inp, int weight, int bias,
                           std::int64_t offset, std::int64_t N) {
    parallel_norm_forward(backend_, grid_, norm_spec(), statistics_.data<double>(), out, mean, rstd, inp,
                          layer_values(weight, offset), layer_values(bias, offset), N);
}

void Decoder::residual_norm_forward(ResidualAdd const& residual, OperandOut out, float* mean, float* rstd, int weight,
                                    int bias, std::int64_t offset, std::int64_t N) {
    parallel_residual_norm_forward(backend_, grid_, norm_spec(), statistics_.data<double>(), residual, out, mean, rstd,
                                   layer_values(weight, offset), layer_values(bias, offset), N);
}

float Decoder::run_forward(Batch const& batch, bool training, double loss_weight_total, KvCache* cache) {
    TraceSpan const span("forward", TraceTrack::steps);
    AXONN_INVARIANT(batch.B > 0 && batch.B <= max_batch_, "batch of {} sequences, the model was built for at most {}",
                    batch.B, max_batch_);
    AXONN_INVARIANT(batch.T > 0 && batch.T <= max_seq_, "sequence of {} tokens, the model was built for at most {}",
                    batch.T, max_seq_);
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    std::int64_t const chunks = logit_chunks(d.BT, options_.logit_rows);
    AXONN_INVARIANT(chunks == 1 || batch.targets != nullptr,
                    "a forward without targets of {} rows needs all their logits: the model holds {} "
                    "(DecoderOptions::logit_rows)",
                    d.BT, logit_capacity());
    begin_pass_weights(training);
    Batch const kernel_batch = batch_for_kernels(batch);
    embed(kernel_batch, cache != nullptr ? cache->length() : 0);
    bool const recompute = options_.recompute == Recompute::layer;
    for (int l = 0; l < d.L; ++l) {
        TraceSpan const layer(TraceTrack::steps, [&] { return fmt::format("layer {}", l); });
        forward_layer(l, recompute ? 0 : l, batch, cache);
    }
    float const* residual = activation(a.outputs + (d.L - 1) * a.BTCx);
    norm_forward(activation(a.final_norm), activation(a.final_norm_mean), activation(a.final_norm_rstd), residual,
                 arch_.params.final_norm, arch_.params.final_norm_bias, 0, d.BT);
    last_batch_ = kernel_batch;
    backward_ready_ = training;
    logits_held_ = chunks == 1;
    head_backward_in_forward_ = chunks > 1 && training;
    return head_forward(batch, kernel_batch, loss_weight_total);
}

void Decoder::begin_pass_weights(bool training) {
    // Weights change between steps: a step's first pass gathers them anew.
    if (!training || pass_.first) step_->weights.invalidate();
    refresh_gemm_weights();
    // The vocabulary blocks [Vr, Vh] (the embedding, and an untied LM head), gathered over Z once for the
    // lookup, the LM head and the backward; the first Linear's gather starts meanwhile.
    std::vector<void const*> vocab_shards;
    std::vector<std::int64_t> vocab_shard_numel;
    for (int which = 0; which < vocab_blocks(arch_); ++which) {
        vocab_shards.push_back(gemm_weight(vocab_param(which)));
        vocab_shard_numel.push_back(layout_.local_numel(vocab_param(which)));
    }
    vocab_->start_gathers(vocab_shards, vocab_shard_numel);
    step_->weights.begin_pass(weight_schedule(training));
    vocab_->wait_gathers();
}

void Decoder::embed(Batch const& kernel_batch, int first_position) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), kernel_batch.B, kernel_batch.T);
    // The positions' embeddings (GPT-2's): those after the cached tokens' when continuing them.
    float const* wpe = arch_.params.positions >= 0
                           ? param_values(arch_.params.positions) + std::int64_t{first_position} * d.Cx
                           : nullptr;
    vocab_parallel_embedding_forward(backend_, grid_, vocab_slice(), activation(a.encoded), vocab_scratch(),
                                     kernel_batch.tokens, gathered_vocab_block(0), wpe, d.B, d.T);
}

VocabScratch Decoder::vocab_scratch() {
    // Free outside the LM head: the head's gathered input, and its input gradient's buffer.
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    return {activation(a.head_input), activation_grads_.data<float>() + a.d_head_input};
}

float Decoder::head_forward(Batch const& batch, Batch const& kernel_batch, double loss_weight_total) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    std::int64_t const chunks = logit_chunks(d.BT, options_.logit_rows);
    VocabSlice const vocab = vocab_slice();
    // The LM head: logits[rows, Vr] from final_norm[rows] and the head's block (GPT-2's is the token embedding's),
    // already gathered, so the GEMM runs on it directly (vocab_parallel.h); then each row's cross-entropy over the
    // vocabulary's ranks. In chunks of rows, a training pass runs each chunk's backward at once, so that every
    // token's share of the loss is needed first.
    double const total = head_backward_in_forward_ ? weigh_tokens_first(batch, loss_weight_total) : loss_weight_total;
    WeightView const head = gathered_vocab_block(vocab_blocks(arch_) - 1);
    float const* head_input = vocab_parallel_head_input(backend_, grid_, vocab, activation(a.head_input),
                                                        vocab_scratch().blocks, activation(a.final_norm), d.BT);
    for (std::int64_t c = 0; c < chunks; ++c) {
        std::int64_t const first = d.BT * c / chunks, rows = d.BT * (c + 1) / chunks - first;
        vocab_parallel_logits(backend_, linear_groups(false), options_.overlap, vocab, activation(a.logits),
                              head_input + first * d.Vh, head, rows);
        if (batch.targets == nullptr) return std::numeric_limits<float>::quiet_NaN();
        float* losses = activation(a.losses) + first;
        float* logsumexp = activation(a.logsumexp) + first;
        float* row_max = activation(a.row_max) + first;
        std::int32_t const* targets = kernel_batch.targets + first;
        if (!head_backward_in_forward_) {
            vocab_parallel_cross_entropy_forward(backend_, grid_, vocab, losses, logsumexp, row_max,
                                                 statistics_.data<double>(), activation(a.logits), targets, rows);
            continue;
        }
        GemmInput const dlogits =
            vocab_parallel_cross_entropy(backend_, grid_, vocab, losses, logsumexp, row_max, statistics_.data<double>(),
                                         activation(a.logits), targets, activation(a.dlosses) + first, rows);
        head_backward(kernel_batch, dlogits, first, rows, c == 0 ? head_block_write() : GradWrite::accumulate);
    }
    return pass_loss(batch, total);
}

float Decoder::pass_loss(Batch const& batch, double loss_weight_total) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    float* losses = activation(a.losses);
    float* dlosses = activation(a.dlosses);
    if (in_host_memory()) return weigh_losses(batch, losses, dlosses, loss_weight_total);
    // B·T numbers each way: the losses down, their weights up.
    std::int64_t const bytes = per_token_bytes(batch);
    backend_.copy_to_host(host_losses_.data(), losses, bytes);
    float const loss = weigh_losses(batch, host_losses_.data(), host_dlosses_.data(), loss_weight_total);
    backend_.copy_from_host(dlosses, host_dlosses_.data(), bytes);
    return loss;
}

float Decoder::weigh_losses(Batch const& batch, float const* losses, float* dlosses, double loss_weight_total) {
    std::int64_t const BT = static_cast<std::int64_t>(batch.B) * batch.T;
    // The mean over the tokens that count in the whole global batch, whose rows are split over data and Z: each
    // token's weight is its mask value, 0 if its target is ignored. With micro-batches, the step's total weight
    // (given) normalises every pass.
    std::array<double, 2> sums = {0.0, 0.0};  // Σ weight · loss, Σ weight
    for (std::int64_t i = 0; i < BT; ++i) {
        double const weight = token_weight(batch, i);
        sums[0] += weight * losses[i];
        sums[1] += weight;
    }
    sum_over_batch(grid_, sums);
    double const total = loss_weight_total > 0.0 ? loss_weight_total : sums[1];
    share_of_loss(batch, dlosses, total);
    return total > 0.0 ? static_cast<float>(sums[0] / total) : 0.0f;
}

double Decoder::weigh_tokens_first(Batch const& batch, double loss_weight_total) {
    // A pass of several gets its step's total (0 when no token of the step counts); only a step's only pass sums
    // its own.
    bool const only_pass = pass_.first && pass_.last && loss_weight_total <= 0.0;
    double const total = only_pass ? global_loss_weight(std::span(&batch, 1)) : loss_weight_total;
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    if (in_host_memory()) {
        share_of_loss(batch, activation(a.dlosses), total);
    } else {
        share_of_loss(batch, host_dlosses_.data(), total);
        backend_.copy_from_host(activation(a.dlosses), host_dlosses_.data(), per_token_bytes(batch));
    }
    return total;
}

// One layer, two residual branches: attention (its norm, the [q | k | v] Linear, rotary positions, attention, the
// output Linear) and the MLP (its norm, the first Linear, the activation, the second Linear). backward_layer
// (decoder_backward.cpp) runs the same steps in reverse. The output Linears write into the sums they feed, which
// the residual adds then complete in place: the backward never reads a projection's output, so no buffer keeps it.
void Decoder::forward_layer(int l, int slot, Batch const& batch, KvCache* cache) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    DecoderParams const& p = arch_.params;
    LinearGroups const normal = linear_groups(false), transposed = linear_groups(true);
    LayerActivations const act(activations_.data<float>(), bf16_activations_.data<bfloat16>(), a, l, slot, d.T);
    LayerOffsets const at(l, d);
    bool const overlap = options_.overlap;
    int const past = cache != nullptr ? cache->length() : 0;

    // attention branch: attn_residual = input + attn_out(attention(rope(qkv(attn_norm(input)))))
    norm_forward(act.attn_norm, act.attn_norm_mean, act.attn_norm_rstd, act.input, p.attn_norm, p.attn_norm_bias, at.Cx,
                 d.BT);
    parallel_linear_forward(k, normal, overlap, act.qkv.values, act.attn_norm.as_input(), step_->weights.next(),
                            layer_values(p.qkv_bias, at.Wy), d.BT, d.Cx, d.Wy);
    rotate_positions(act.qkv.values, d, past, +1);
    if (cache != nullptr) {
        k.attention_cached(act.attn.values, act.attn_lse, cache->keys(l), cache->values(l), act.qkv.values, d.B,
                           d.T, past, cache->capacity(), d.Cy, d.NHy, d.NKVy);
    } else {
        keep_rounded(act.qkv, d.BT * d.Wy);
        k.attention_forward(act.attn.values, act.attn_lse, act.qkv.as_input(), d.B, d.T, d.Cy, d.NHy, d.NKVy);
    }
    keep_rounded(act.attn, d.BT * d.Cy);
    parallel_linear_forward(k, transposed, overlap, act.attn_residual, act.attn.as_input(), step_->weights.next(),
                            layer_values(p.attn_out_bias, at.Cx), d.BT, d.Cy, d.Cx);

    // MLP branch: output = attn_residual + mlp_out(activation(mlp_in(mlp_norm(attn_residual)))); attention's
    // residual add and mlp_norm's statistics in one pass.
    residual_norm_forward({act.attn_residual, act.input, act.attn_residual}, act.mlp_norm, act.mlp_norm_mean,
                          act.mlp_norm_rstd, p.mlp_norm, p.mlp_norm_bias, at.Cx, d.BT);
    // GELU's Linear leaves its bias to the activation's pass (bias_gelu_forward), after the all-reduce.
    float const* mlp_in_bias = layer_values(p.mlp_in_bias, at.Uy);
    parallel_linear_forward(k, normal, overlap, act.mlp_hidden.values, act.mlp_norm.as_input(),
                            step_->weights.next(), arch_.gelu ? nullptr : mlp_in_bias, d.BT, d.Cx, d.Uy);
    mlp_activation_forward(act.mlp_act, act.mlp_hidden, arch_.gelu ? mlp_in_bias : nullptr, d);
    parallel_linear_forward(k, transposed, overlap, act.output, act.mlp_act.as_input(), step_->weights.next(),
                            layer_values(p.mlp_out_bias, at.Cx), d.BT, d.Fy, d.Cx);
    k.residual_forward(act.output, act.attn_residual, act.output, d.BT * d.Cx);
}

void Decoder::rotate_positions(float* qkv, LocalDims const& d, int first_position, int direction) {
    if (arch_.rope_inv_freq.empty()) return;  // learned positions (GPT-2's), added with the embedding
    // This rank's query heads, then its key heads, in each row of [q | k | v].
    backend_.rope_rotate(qkv, arch_.rope_inv_freq.data(), d.B, d.T, d.NHy, d.hs, d.Wy, first_position, direction);
    backend_.rope_rotate(qkv + d.Cy, arch_.rope_inv_freq.data(), d.B, d.T, d.NKVy, d.hs, d.Wy, first_position,
                         direction);
}

void Decoder::keep_rounded(KeptActivation const& activation, std::int64_t n) {
    if (activation.rounded != nullptr) {
        backend_.convert(activation.rounded, DType::bf16, activation.values, DType::f32, n);
    }
}

void Decoder::mlp_activation_forward(OperandOut out, KeptActivation const& inp, float const* bias,
                                     LocalDims const& d) {
    if (arch_.gelu) {
        backend_.bias_gelu_forward(out, inp.values, bias, d.BT, d.Fy, inp.rounded);
        return;
    }
    AXONN_INVARIANT(bias == nullptr, "SwiGLU's bias is added by its Linear");
    backend_.swiglu_forward(out, inp.values, d.BT, d.Fy);
    keep_rounded(inp, d.BT * d.Uy);
}

}  // namespace axonn
