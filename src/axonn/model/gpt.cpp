#include "axonn/model/gpt.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <limits>

namespace axonn {
namespace {

// Offsets (in floats) of every activation buffer, for batches of up to maxB × maxT tokens. Per-layer buffers
// are stacked: layer l's copy starts at offset + l · stride. The backward's scratch lives in a second buffer.
struct ActivationLayout {
    std::int64_t BTC, BT3C, BT4C, BT, att_size;  // per-layer strides
    std::int64_t encoded, ln1, ln1_mean, ln1_rstd, qkv, atty, att, attproj, residual2, ln2, ln2_mean, ln2_rstd, fch,
        fch_gelu, fcproj, residual3, lnf, lnf_mean, lnf_rstd, logits, losses, logsumexp, dlosses, total;
    // backward scratch, reused by every layer
    std::int64_t d_residual_out, d_residual_in, d_branch, d_ln, d_fch_gelu, d_fch, d_atty, d_qkv, grad_total;

    ActivationLayout(GptConfig const& config, int maxB, int maxT) {
        std::int64_t const L = config.n_layer, C = config.n_embd, NH = config.n_head, Vp = config.padded_vocab_size();
        BT = static_cast<std::int64_t>(maxB) * maxT;
        BTC = BT * C;
        BT3C = 3 * BTC;
        BT4C = 4 * BTC;
        att_size = static_cast<std::int64_t>(maxB) * NH * maxT * maxT;
        std::int64_t next = 0;
        auto take = [&next](std::int64_t size) { return std::exchange(next, next + size); };
        encoded = take(BTC);
        ln1 = take(L * BTC);
        ln1_mean = take(L * BT);
        ln1_rstd = take(L * BT);
        qkv = take(L * BT3C);
        atty = take(L * BTC);
        att = take(L * att_size);
        attproj = take(L * BTC);
        residual2 = take(L * BTC);
        ln2 = take(L * BTC);
        ln2_mean = take(L * BT);
        ln2_rstd = take(L * BT);
        fch = take(L * BT4C);
        fch_gelu = take(L * BT4C);
        fcproj = take(L * BTC);
        residual3 = take(L * BTC);
        lnf = take(BTC);
        lnf_mean = take(BT);
        lnf_rstd = take(BT);
        logits = take(BT * Vp);
        losses = take(BT);
        logsumexp = take(BT);
        dlosses = take(BT);
        total = next;

        next = 0;
        d_residual_out = take(BTC);
        d_residual_in = take(BTC);
        d_branch = take(BTC);
        d_ln = take(BTC);
        d_fch_gelu = take(BT4C);
        d_fch = take(BT4C);
        d_atty = take(BTC);
        d_qkv = take(BT3C);
        grad_total = next;
    }
};

}  // namespace

GptMemory gpt_memory(GptConfig const& config, int max_batch, int max_seq) {
    std::int64_t const parameter_bytes = ParamLayout(config).total * 4;
    ActivationLayout const activations(config, max_batch, max_seq);
    return {parameter_bytes, parameter_bytes, 2 * parameter_bytes,
            (activations.total + activations.grad_total) * 4};
}

Gpt::Gpt(GptConfig const& config, Backend& backend, int max_batch, int max_seq)
    : config_(config), backend_(backend), max_batch_(max_batch), max_seq_(max_seq), layout_(config) {
    config_.validate();
    require(max_batch > 0, "batch size must be positive, got {}", max_batch);
    require(max_seq > 0, "sequence length must be positive, got {}", max_seq);
    require(max_seq <= config.max_seq, "sequence length {} is longer than the model's context {}: lower --seq",
            max_seq, config.max_seq);
    ActivationLayout const sizes(config_, max_batch, max_seq);
    parameters_ = Tensor({layout_.total}, DType::f32);
    gradients_ = Tensor({layout_.total}, DType::f32);
    activations_ = Tensor({sizes.total}, DType::f32);
    activation_grads_ = Tensor({sizes.grad_total}, DType::f32);
}

void Gpt::init_weights(std::uint64_t seed) {
    for (auto const& spec : layout_.specs) {
        float* values = param(spec.id);
        std::int64_t numel = shape_numel(spec.shape);
        if (spec.id == Param::wte) numel = static_cast<std::int64_t>(config_.vocab_size) * config_.n_embd;
        std::span<float> tensor(values, static_cast<std::size_t>(numel));
        switch (spec.init) {
            case ParamInit::normal:
                fill_normal(tensor, {seed, static_cast<std::uint64_t>(spec.id) + 1}, 0, 0.0f, spec.init_std);
                break;
            case ParamInit::ones: std::fill(tensor.begin(), tensor.end(), 1.0f); break;
            case ParamInit::zeros: std::fill(tensor.begin(), tensor.end(), 0.0f); break;
        }
    }
    // The padding rows of wte are never looked up, and their logits are masked: keep them exactly zero.
    std::int64_t const real = static_cast<std::int64_t>(config_.vocab_size) * config_.n_embd;
    std::fill(param(Param::wte) + real, param(Param::wte) + layout_.numel(Param::wte), 0.0f);
}

float const* Gpt::logits() const {
    ActivationLayout const a(config_, max_batch_, max_seq_);
    return activations_.data<float>() + a.logits;
}

float Gpt::forward(Batch const& batch) {
    require(batch.B > 0 && batch.B <= max_batch_, "batch of {} sequences, the model was built for at most {}",
            batch.B, max_batch_);
    require(batch.T > 0 && batch.T <= max_seq_, "sequence of {} tokens, the model was built for at most {}", batch.T,
            max_seq_);
    ActivationLayout const a(config_, max_batch_, max_seq_);
    int const B = batch.B, T = batch.T, C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
    int const V = config_.vocab_size, Vp = config_.padded_vocab_size();
    std::int64_t const BT = static_cast<std::int64_t>(B) * T;
    Backend& k = backend_;

    k.encoder_forward(activation(a.encoded), batch.tokens, param(Param::wte), param(Param::wpe), B, T, C);
    for (int l = 0; l < L; ++l) {
        float const* residual = l == 0 ? activation(a.encoded) : activation(a.residual3 + (l - 1) * a.BTC);
        float* ln1 = activation(a.ln1 + l * a.BTC);               // [B,T,C]
        float* ln1_mean = activation(a.ln1_mean + l * a.BT);      // [B,T]
        float* ln1_rstd = activation(a.ln1_rstd + l * a.BT);      // [B,T]
        float* qkv = activation(a.qkv + l * a.BT3C);              // [B,T,3C]
        float* atty = activation(a.atty + l * a.BTC);             // [B,T,C]
        float* att = activation(a.att + l * a.att_size);          // [B,NH,T,T]
        float* attproj = activation(a.attproj + l * a.BTC);       // [B,T,C]
        float* residual2 = activation(a.residual2 + l * a.BTC);   // [B,T,C]
        float* ln2 = activation(a.ln2 + l * a.BTC);               // [B,T,C]
        float* ln2_mean = activation(a.ln2_mean + l * a.BT);      // [B,T]
        float* ln2_rstd = activation(a.ln2_rstd + l * a.BT);      // [B,T]
        float* fch = activation(a.fch + l * a.BT4C);              // [B,T,4C]
        float* fch_gelu = activation(a.fch_gelu + l * a.BT4C);    // [B,T,4C]
        float* fcproj = activation(a.fcproj + l * a.BTC);         // [B,T,C]
        float* residual3 = activation(a.residual3 + l * a.BTC);   // [B,T,C]
        std::int64_t const lC = static_cast<std::int64_t>(l) * C;

        k.layernorm_forward(ln1, ln1_mean, ln1_rstd, residual, param(Param::ln1w) + lC, param(Param::ln1b) + lC, BT, C);
        k.linear_forward(qkv, ln1, param(Param::qkvw) + 3 * lC * C, param(Param::qkvb) + 3 * lC, BT, C, 3 * C);
        k.attention_forward(atty, att, qkv, B, T, C, NH);
        k.linear_forward(attproj, atty, param(Param::attprojw) + lC * C, param(Param::attprojb) + lC, BT, C, C);
        k.residual_forward(residual2, residual, attproj, BT * C);
        k.layernorm_forward(ln2, ln2_mean, ln2_rstd, residual2, param(Param::ln2w) + lC, param(Param::ln2b) + lC, BT, C);
        k.linear_forward(fch, ln2, param(Param::fcw) + 4 * lC * C, param(Param::fcb) + 4 * lC, BT, C, 4 * C);
        k.gelu_forward(fch_gelu, fch, BT * 4 * C);
        k.linear_forward(fcproj, fch_gelu, param(Param::fcprojw) + 4 * lC * C, param(Param::fcprojb) + lC, BT, 4 * C,
                         C);
        k.residual_forward(residual3, residual2, fcproj, BT * C);
    }
    float const* residual = activation(a.residual3 + (L - 1) * a.BTC);
    k.layernorm_forward(activation(a.lnf), activation(a.lnf_mean), activation(a.lnf_rstd), residual,
                        param(Param::lnfw), param(Param::lnfb), BT, C);
    // The LM head is the token embedding, transposed: logits[B,T,Vp] = lnf[B,T,C] · wte[Vp,C]ᵀ
    k.linear_forward(activation(a.logits), activation(a.lnf), param(Param::wte), nullptr, BT, C, Vp);

    last_batch_ = batch;
    backward_ready_ = batch.targets != nullptr;
    if (!backward_ready_) return std::numeric_limits<float>::quiet_NaN();

    float* losses = activation(a.losses);
    float* dlosses = activation(a.dlosses);
    k.cross_entropy_forward(losses, activation(a.logsumexp), activation(a.logits), batch.targets, BT, V, Vp);
    // Mean over the tokens that count: each token's weight is its mask value, 0 if its target is ignored.
    double weight_sum = 0.0;
    for (std::int64_t i = 0; i < BT; ++i) {
        dlosses[i] = batch.targets[i] < 0 ? 0.0f : (batch.loss_mask ? batch.loss_mask[i] : 1.0f);
        weight_sum += dlosses[i];
    }
    double loss = 0.0;
    for (std::int64_t i = 0; i < BT; ++i) {
        dlosses[i] = weight_sum > 0.0 ? static_cast<float>(dlosses[i] / weight_sum) : 0.0f;
        loss += static_cast<double>(dlosses[i]) * losses[i];
    }
    return static_cast<float>(loss);
}

// The gradients that a GEMM writes in full, first thing in the backward; every other gradient is accumulated
// into by its kernel and must start from zero when the backward overwrites.
constexpr std::array<Param, 5> gemm_written_grads = {Param::wte, Param::qkvw, Param::attprojw, Param::fcw,
                                                     Param::fcprojw};

void Gpt::backward(GradWrite write) {
    require(backward_ready_, "backward() needs a forward() with targets first");
    backward_ready_ = false;
    if (write == GradWrite::overwrite) {
        for (auto const& spec : layout_.specs) {
            if (std::find(gemm_written_grads.begin(), gemm_written_grads.end(), spec.id) != gemm_written_grads.end()) {
                continue;
            }
            std::fill_n(grad(spec.id), layout_.numel(spec.id), 0.0f);
        }
    }
    ActivationLayout const a(config_, max_batch_, max_seq_);
    Batch const& batch = last_batch_;
    int const B = batch.B, T = batch.T, C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
    int const V = config_.vocab_size, Vp = config_.padded_vocab_size();
    std::int64_t const BT = static_cast<std::int64_t>(B) * T;
    Backend& k = backend_;
    float* scratch = activation_grads_.data<float>();
    float* d_residual_out = scratch + a.d_residual_out;  // [B,T,C] gradient of the current layer's output
    float* d_residual_in = scratch + a.d_residual_in;    // [B,T,C] gradient of its input
    float* d_branch = scratch + a.d_branch;              // [B,T,C] attproj / fcproj
    float* d_ln = scratch + a.d_ln;                      // [B,T,C] ln1 / ln2 / lnf
    float* d_fch_gelu = scratch + a.d_fch_gelu;          // [B,T,4C]
    float* d_fch = scratch + a.d_fch;                    // [B,T,4C]
    float* d_atty = scratch + a.d_atty;                  // [B,T,C]
    float* d_qkv = scratch + a.d_qkv;                    // [B,T,3C]
    std::size_t const btc_bytes = static_cast<std::size_t>(BT) * C * sizeof(float);
    auto zero = [](float* buffer, std::size_t bytes) { std::memset(buffer, 0, bytes); };

    // The logits buffer becomes dlogits in place: the logits are not needed again.
    float* dlogits = activation(a.logits);
    k.cross_entropy_backward(dlogits, activation(a.logits), activation(a.logsumexp), batch.targets,
                             activation(a.dlosses), BT, V, Vp);
    zero(d_ln, btc_bytes);
    k.linear_backward(d_ln, grad(Param::wte), nullptr, dlogits, activation(a.lnf), param(Param::wte), BT, C, Vp,
                      write);
    zero(d_residual_out, btc_bytes);
    k.layernorm_backward(d_residual_out, grad(Param::lnfw), grad(Param::lnfb), d_ln,
                         activation(a.residual3 + (L - 1) * a.BTC), param(Param::lnfw), activation(a.lnf_mean),
                         activation(a.lnf_rstd), BT, C);

    for (int l = L - 1; l >= 0; --l) {
        float const* residual = l == 0 ? activation(a.encoded) : activation(a.residual3 + (l - 1) * a.BTC);
        float const* ln1 = activation(a.ln1 + l * a.BTC);
        float const* ln1_mean = activation(a.ln1_mean + l * a.BT);
        float const* ln1_rstd = activation(a.ln1_rstd + l * a.BT);
        float const* qkv = activation(a.qkv + l * a.BT3C);
        float const* atty = activation(a.atty + l * a.BTC);
        float const* att = activation(a.att + l * a.att_size);
        float const* residual2 = activation(a.residual2 + l * a.BTC);
        float const* ln2 = activation(a.ln2 + l * a.BTC);
        float const* ln2_mean = activation(a.ln2_mean + l * a.BT);
        float const* ln2_rstd = activation(a.ln2_rstd + l * a.BT);
        float const* fch = activation(a.fch + l * a.BT4C);
        float const* fch_gelu = activation(a.fch_gelu + l * a.BT4C);
        std::int64_t const lC = static_cast<std::int64_t>(l) * C;

        // residual3 = residual2 + fcproj: both receive d_residual_out. d_residual_in collects residual2's gradient.
        zero(d_residual_in, btc_bytes);
        zero(d_branch, btc_bytes);
        k.residual_backward(d_residual_in, d_branch, d_residual_out, BT * C);
        zero(d_fch_gelu, 4 * btc_bytes);
        k.linear_backward(d_fch_gelu, grad(Param::fcprojw) + 4 * lC * C, grad(Param::fcprojb) + lC, d_branch, fch_gelu,
                          param(Param::fcprojw) + 4 * lC * C, BT, 4 * C, C, write);
        zero(d_fch, 4 * btc_bytes);
        k.gelu_backward(d_fch, fch, d_fch_gelu, BT * 4 * C);
        zero(d_ln, btc_bytes);
        k.linear_backward(d_ln, grad(Param::fcw) + 4 * lC * C, grad(Param::fcb) + 4 * lC, d_fch, ln2,
                          param(Param::fcw) + 4 * lC * C, BT, C, 4 * C, write);
        k.layernorm_backward(d_residual_in, grad(Param::ln2w) + lC, grad(Param::ln2b) + lC, d_ln, residual2,
                             param(Param::ln2w) + lC, ln2_mean, ln2_rstd, BT, C);

        // residual2 = residual + attproj: the same split, now from d_residual_in into d_residual_out.
        zero(d_residual_out, btc_bytes);
        zero(d_branch, btc_bytes);
        k.residual_backward(d_residual_out, d_branch, d_residual_in, BT * C);
        zero(d_atty, btc_bytes);
        k.linear_backward(d_atty, grad(Param::attprojw) + lC * C, grad(Param::attprojb) + lC, d_branch, atty,
                          param(Param::attprojw) + lC * C, BT, C, C, write);
        zero(d_qkv, 3 * btc_bytes);
        k.attention_backward(d_qkv, d_atty, qkv, att, B, T, C, NH);
        zero(d_ln, btc_bytes);
        k.linear_backward(d_ln, grad(Param::qkvw) + 3 * lC * C, grad(Param::qkvb) + 3 * lC, d_qkv, ln1,
                          param(Param::qkvw) + 3 * lC * C, BT, C, 3 * C, write);
        k.layernorm_backward(d_residual_out, grad(Param::ln1w) + lC, grad(Param::ln1b) + lC, d_ln, residual,
                             param(Param::ln1w) + lC, ln1_mean, ln1_rstd, BT, C);
    }
    k.encoder_backward(grad(Param::wte), grad(Param::wpe), d_residual_out, batch.tokens, B, T, C);
}

}  // namespace axonn
