#include "axonn/model/gpt.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/parallel/layernorm.h"
#include "axonn/parallel/linear.h"
#include "axonn/parallel/vocab_parallel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace axonn {
namespace {

// This process's share of the model's dimensions.
struct LocalDims {
    int B, T, C, Cx, Cy, NHy, L, Vpy;
    std::int64_t BT;

    LocalDims(GptConfig const& config, GridShape const& grid, int B_, int T_)
        : B(B_), T(T_), C(config.n_embd), Cx(config.n_embd / grid.x), Cy(config.n_embd / grid.y),
          NHy(config.n_head / grid.y), L(config.n_layer), Vpy(config.padded_vocab_size() / grid.y),
          BT(static_cast<std::int64_t>(B_) * T_) {}
};

// Every buffer size below is computed in 64 bits; a model, batch and sequence whose activations would not fit
// (the attention probabilities grow with L·B·NH·T²) are refused before anything is computed.
void require_sizes_fit(LocalDims const& d) {
    long double const per_layer = static_cast<long double>(d.BT) * (16.0L * d.Cx + 16.0L * d.Cy + 8.0L) +
                                  static_cast<long double>(d.B) * d.NHy * d.T * d.T;
    long double const elements = d.L * per_layer + static_cast<long double>(d.BT) * (d.Vpy + 4.0L * d.Cx + 8.0L);
    require(elements < 0x1p62L, "{} sequences of {} tokens of this model need about {:.3g} activation values per "
            "rank, beyond what any machine holds: lower --batch or --seq, or use more ranks", d.B, d.T,
            static_cast<double>(elements));
}

// Offsets (in floats) of every activation buffer, for batches of up to maxB × maxT local rows. Per-layer buffers
// are stacked: layer l's copy starts at offset + l · stride. The backward's scratch lives in a second buffer.
struct ActivationLayout {
    std::int64_t BTCx, BT3Cy, BTCy, BT4Cy, BT, att_size;  // per-layer strides
    std::int64_t encoded, ln1, ln1_mean, ln1_rstd, qkv, atty, att, attproj, residual2, ln2, ln2_mean, ln2_rstd, fch,
        fch_gelu, fcproj, residual3, lnf, lnf_mean, lnf_rstd, logits, losses, logsumexp, row_max, dlosses, total;
    // backward scratch, reused by every layer
    std::int64_t d_residual_out, d_residual_in, d_branch, d_ln, d_fch_gelu, d_fch, d_atty, d_qkv, grad_total;

    explicit ActivationLayout(LocalDims const& d) {
        BT = d.BT;
        BTCx = BT * d.Cx;
        BTCy = BT * d.Cy;
        BT3Cy = 3 * BTCy;
        BT4Cy = 4 * BTCy;
        att_size = static_cast<std::int64_t>(d.B) * d.NHy * d.T * d.T;
        std::int64_t const L = d.L;
        std::int64_t next = 0;
        auto take = [&next](std::int64_t size) { return std::exchange(next, next + size); };
        encoded = take(BTCx);
        ln1 = take(L * BTCx);
        ln1_mean = take(L * BT);
        ln1_rstd = take(L * BT);
        qkv = take(L * BT3Cy);
        atty = take(L * BTCy);
        att = take(L * att_size);
        attproj = take(L * BTCx);
        residual2 = take(L * BTCx);
        ln2 = take(L * BTCx);
        ln2_mean = take(L * BT);
        ln2_rstd = take(L * BT);
        fch = take(L * BT4Cy);
        fch_gelu = take(L * BT4Cy);
        fcproj = take(L * BTCx);
        residual3 = take(L * BTCx);
        lnf = take(BTCx);
        lnf_mean = take(BT);
        lnf_rstd = take(BT);
        logits = take(BT * d.Vpy);
        losses = take(BT);
        logsumexp = take(BT);
        row_max = take(BT);
        dlosses = take(BT);
        total = next;

        next = 0;
        d_residual_out = take(BTCx);
        d_residual_in = take(BTCx);
        d_branch = take(BTCx);
        d_ln = take(BTCx);
        d_fch_gelu = take(BT4Cy);
        d_fch = take(BT4Cy);
        d_atty = take(BTCy);
        d_qkv = take(BT3Cy);
        grad_total = next;
    }
};

// Weight blocks gathered over Z and their gradients before the reduce-scatter: the largest Linear block, and
// the embedding's, which stays gathered from the lookup to the LM head and through the backward.
struct WeightWorkspaceLayout {
    std::int64_t linear_block, wte_block;
    std::int64_t gathered, grad_block, wte_gathered, wte_grad, total;

    WeightWorkspaceLayout(LocalDims const& d, int z) {
        linear_block = static_cast<std::int64_t>(4) * d.Cy * d.Cx;
        wte_block = static_cast<std::int64_t>(d.Vpy) * d.Cx;
        bool const split = z > 1;
        gathered = 0;
        grad_block = split ? linear_block : 0;
        wte_gathered = grad_block + (split ? linear_block : 0);
        wte_grad = wte_gathered + (split ? wte_block : 0);
        total = wte_grad + (split ? wte_block : 0);
    }
};

// The gradients that a GEMM writes in full; every other gradient is accumulated into by its kernel and must
// start from zero when the backward overwrites.
constexpr std::array<Param, 5> gemm_written_grads = {Param::wte, Param::qkvw, Param::attprojw, Param::fcw,
                                                     Param::fcprojw};

}  // namespace

Gpt::Gpt(GptConfig const& config, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq)
    : config_(config), backend_(backend), grid_(grid), max_batch_(local_batch), max_seq_(max_seq),
      layout_(config, GridPosition::of(grid)) {
    config_.validate();
    require(local_batch > 0, "batch size must be positive, got {}", local_batch);
    require(max_seq > 0, "sequence length must be positive, got {}", max_seq);
    require(max_seq <= config.max_seq, "sequence length {} is longer than the model's context {}: lower --seq",
            max_seq, config.max_seq);
    GridShape const& shape = grid.shape();
    require_valid_grid(config_, shape, grid.world_size(), local_batch * shape.data * shape.z);
    LocalDims const dims(config_, shape, local_batch, max_seq);
    require_sizes_fit(dims);
    ActivationLayout const sizes(dims);
    parameters_ = Tensor({layout_.total()}, DType::f32);
    gradients_ = Tensor({layout_.total()}, DType::f32);
    activations_ = Tensor({sizes.total}, DType::f32);
    activation_grads_ = Tensor({sizes.grad_total}, DType::f32);
    statistics_ = Tensor({dims.BT, 2}, DType::f64);
    weight_workspace_ = Tensor({std::max<std::int64_t>(1, WeightWorkspaceLayout(dims, shape.z).total)}, DType::f32);
}

GptMemory gpt_memory(GptConfig const& config, GridShape const& grid, int local_batch, int seq) {
    std::int64_t const parameter_bytes = ShardLayout(config, GridPosition{grid}).total() * 4;
    LocalDims const dims(config, grid, local_batch, seq);
    require_sizes_fit(dims);
    ActivationLayout const activations(dims);
    std::int64_t const statistics_bytes = dims.BT * 2 * 8;
    std::int64_t const workspace = WeightWorkspaceLayout(dims, grid.z).total;
    return {parameter_bytes, parameter_bytes, 2 * parameter_bytes,
            (activations.total + activations.grad_total) * 4 + statistics_bytes,
            std::max<std::int64_t>(1, workspace) * 4};
}

std::vector<ParamSegment> Gpt::segments() const {
    std::vector<ParamSegment> segments;
    for (auto const& spec : gpt_parameter_specs(config_)) {
        segments.push_back({layout_.offset(spec.id), layout_.local_numel(spec.id), spec.decay});
    }
    return segments;
}

VocabSlice Gpt::vocab_slice() const {
    int const rows = config_.padded_vocab_size() / grid_.shape().y;
    int const begin = grid_.coord(Axis::y) * rows;
    return {begin, rows, std::clamp(config_.vocab_size - begin, 0, rows)};
}

void Gpt::init_weights(std::uint64_t seed) {
    for (auto const& spec : gpt_parameter_specs(config_)) {
        float* values = param(spec.id);
        std::int64_t const numel = layout_.local_numel(spec.id);
        PhiloxKey const key{seed, static_cast<std::uint64_t>(spec.id) + 1};
        for (std::int64_t i = 0; i < numel; ++i) {
            switch (spec.init) {
                case ParamInit::normal: {
                    std::int64_t const index = layout_.serial_index(spec.id, i);
                    // The padding rows of wte are never looked up and their logits are masked: exactly zero.
                    bool const padding = spec.id == Param::wte && index / config_.n_embd >= config_.vocab_size;
                    values[i] = padding ? 0.0f : static_cast<float>(spec.init_std * standard_normal(key, index));
                    break;
                }
                case ParamInit::ones: values[i] = 1.0f; break;
                case ParamInit::zeros: values[i] = 0.0f; break;
            }
        }
    }
}

float const* Gpt::logits() const {
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_));
    return activations_.data<float>() + a.logits;
}

float Gpt::forward(Batch const& batch) {
    invariant(batch.B > 0 && batch.B <= max_batch_, "batch of {} sequences, the model was built for at most {}",
            batch.B, max_batch_);
    invariant(batch.T > 0 && batch.T <= max_seq_, "sequence of {} tokens, the model was built for at most {}", batch.T,
            max_seq_);
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_));
    LocalDims const d(config_, grid_.shape(), batch.B, batch.T);
    WeightWorkspaceLayout const w(d, grid_.shape().z);
    float* workspace = weight_workspace_.data<float>();
    Backend& k = backend_;
    Communicator &x = grid_.comm(Group::x), &y = grid_.comm(Group::y), &z = grid_.comm(Group::z);
    LinearGroups const normal{x, y, z}, transposed{y, x, z};
    LinearWorkspace const linear_workspace{workspace + w.gathered, workspace + w.grad_block};
    double* stats = statistics_.data<double>();
    VocabSlice const vocab = vocab_slice();

    // The embedding block [Vp/G_y, C/G_x], gathered over Z once for the lookup, the LM head and the backward.
    float const* wte = param(Param::wte);
    if (z.size() > 1) {
        z.all_gather(wte, workspace + w.wte_gathered, static_cast<std::size_t>(layout_.local_numel(Param::wte)));
        wte = workspace + w.wte_gathered;
    }
    float const* wpe = grid_.coord(Axis::y) == 0 ? param(Param::wpe) : nullptr;  // added once over Y
    vocab_parallel_embedding_forward(k, y, vocab, activation(a.encoded), batch.tokens, wte, wpe, d.B, d.T, d.Cx);

    std::int64_t const per_layer_qkvw = layout_.local_numel(Param::qkvw) / d.L;
    std::int64_t const per_layer_attprojw = layout_.local_numel(Param::attprojw) / d.L;
    std::int64_t const per_layer_fcw = layout_.local_numel(Param::fcw) / d.L;
    std::int64_t const per_layer_fcprojw = layout_.local_numel(Param::fcprojw) / d.L;
    for (int l = 0; l < d.L; ++l) {
        float const* residual = l == 0 ? activation(a.encoded) : activation(a.residual3 + (l - 1) * a.BTCx);
        float* ln1 = activation(a.ln1 + l * a.BTCx);              // [B,T,C/Gx]
        float* ln1_mean = activation(a.ln1_mean + l * a.BT);      // [B,T]
        float* ln1_rstd = activation(a.ln1_rstd + l * a.BT);      // [B,T]
        float* qkv = activation(a.qkv + l * a.BT3Cy);             // [B,T,3C/Gy]
        float* atty = activation(a.atty + l * a.BTCy);            // [B,T,C/Gy]
        float* att = activation(a.att + l * a.att_size);          // [B,NH/Gy,T,T]
        float* attproj = activation(a.attproj + l * a.BTCx);      // [B,T,C/Gx]
        float* residual2 = activation(a.residual2 + l * a.BTCx);  // [B,T,C/Gx]
        float* ln2 = activation(a.ln2 + l * a.BTCx);              // [B,T,C/Gx]
        float* ln2_mean = activation(a.ln2_mean + l * a.BT);      // [B,T]
        float* ln2_rstd = activation(a.ln2_rstd + l * a.BT);      // [B,T]
        float* fch = activation(a.fch + l * a.BT4Cy);             // [B,T,4C/Gy]
        float* fch_gelu = activation(a.fch_gelu + l * a.BT4Cy);   // [B,T,4C/Gy]
        float* fcproj = activation(a.fcproj + l * a.BTCx);        // [B,T,C/Gx]
        float* residual3 = activation(a.residual3 + l * a.BTCx);  // [B,T,C/Gx]
        std::int64_t const lCx = static_cast<std::int64_t>(l) * d.Cx, lCy = static_cast<std::int64_t>(l) * d.Cy;

        parallel_layernorm_forward(k, x, stats, ln1, ln1_mean, ln1_rstd, residual, param(Param::ln1w) + lCx,
                                   param(Param::ln1b) + lCx, d.BT, d.Cx, d.C);
        parallel_linear_forward(k, normal, linear_workspace, qkv, ln1, param(Param::qkvw) + l * per_layer_qkvw,
                                param(Param::qkvb) + 3 * lCy, d.BT, d.Cx, 3 * d.Cy);
        k.attention_forward(atty, att, qkv, d.B, d.T, d.Cy, d.NHy);
        parallel_linear_forward(k, transposed, linear_workspace, attproj, atty,
                                param(Param::attprojw) + l * per_layer_attprojw, param(Param::attprojb) + lCx, d.BT,
                                d.Cy, d.Cx);
        k.residual_forward(residual2, residual, attproj, a.BTCx);
        parallel_layernorm_forward(k, x, stats, ln2, ln2_mean, ln2_rstd, residual2, param(Param::ln2w) + lCx,
                                   param(Param::ln2b) + lCx, d.BT, d.Cx, d.C);
        parallel_linear_forward(k, normal, linear_workspace, fch, ln2, param(Param::fcw) + l * per_layer_fcw,
                                param(Param::fcb) + 4 * lCy, d.BT, d.Cx, 4 * d.Cy);
        k.gelu_forward(fch_gelu, fch, d.BT * 4 * d.Cy);
        parallel_linear_forward(k, transposed, linear_workspace, fcproj, fch_gelu,
                                param(Param::fcprojw) + l * per_layer_fcprojw, param(Param::fcprojb) + lCx, d.BT,
                                4 * d.Cy, d.Cx);
        k.residual_forward(residual3, residual2, fcproj, d.BT * d.Cx);
    }
    float const* residual = activation(a.residual3 + (d.L - 1) * a.BTCx);
    parallel_layernorm_forward(k, x, stats, activation(a.lnf), activation(a.lnf_mean), activation(a.lnf_rstd),
                               residual, param(Param::lnfw), param(Param::lnfb), d.BT, d.Cx, d.C);
    // The LM head is the token embedding, transposed: logits[B,T,Vp/Gy] = AllReduce_X(lnf · wte_blkᵀ). The block
    // is already gathered, so the GEMM runs on it directly.
    k.linear_forward(activation(a.logits), activation(a.lnf), wte, nullptr, d.BT, d.Cx, d.Vpy);
    x.all_reduce(activation(a.logits), static_cast<std::size_t>(d.BT * d.Vpy));

    last_batch_ = batch;
    backward_ready_ = batch.targets != nullptr;
    if (!backward_ready_) return std::numeric_limits<float>::quiet_NaN();

    float* losses = activation(a.losses);
    float* dlosses = activation(a.dlosses);
    vocab_parallel_cross_entropy_forward(k, y, vocab, losses, activation(a.logsumexp), activation(a.row_max), stats,
                                         activation(a.logits), batch.targets, d.BT);
    // Mean over the tokens that count in the whole global batch, whose rows are split over data and Z: each
    // token's weight is its mask value, 0 if its target is ignored.
    std::array<double, 2> sums = {0.0, 0.0};  // Σ weight · loss, Σ weight
    for (std::int64_t i = 0; i < d.BT; ++i) {
        double const weight = batch.targets[i] < 0 ? 0.0 : (batch.loss_mask ? batch.loss_mask[i] : 1.0);
        sums[0] += weight * losses[i];
        sums[1] += weight;
        dlosses[i] = static_cast<float>(weight);
    }
    grid_.comm(Group::z).all_reduce(sums.data(), 2);
    grid_.comm(Group::data).all_reduce(sums.data(), 2);
    for (std::int64_t i = 0; i < d.BT; ++i) dlosses[i] = sums[1] > 0.0 ? static_cast<float>(dlosses[i] / sums[1]) : 0.0f;
    return sums[1] > 0.0 ? static_cast<float>(sums[0] / sums[1]) : 0.0f;
}

void Gpt::backward(GradWrite write) {
    invariant(backward_ready_, "backward() needs a forward() with targets first");
    backward_ready_ = false;
    if (write == GradWrite::overwrite) {
        for (auto const& spec : gpt_parameter_specs(config_)) {
            if (std::find(gemm_written_grads.begin(), gemm_written_grads.end(), spec.id) != gemm_written_grads.end()) {
                continue;
            }
            std::fill_n(grad(spec.id), layout_.local_numel(spec.id), 0.0f);
        }
    }
    Batch const& batch = last_batch_;
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_));
    LocalDims const d(config_, grid_.shape(), batch.B, batch.T);
    WeightWorkspaceLayout const w(d, grid_.shape().z);
    float* workspace = weight_workspace_.data<float>();
    Backend& k = backend_;
    Communicator &x = grid_.comm(Group::x), &y = grid_.comm(Group::y), &z = grid_.comm(Group::z);
    LinearGroups const normal{x, y, z}, transposed{y, x, z};
    LinearWorkspace const linear_workspace{workspace + w.gathered, workspace + w.grad_block};
    double* stats = statistics_.data<double>();
    VocabSlice const vocab = vocab_slice();
    float* scratch = activation_grads_.data<float>();
    float* d_residual_out = scratch + a.d_residual_out;  // [B,T,C/Gx] gradient of the current layer's output
    float* d_residual_in = scratch + a.d_residual_in;    // [B,T,C/Gx] gradient of its input
    float* d_branch = scratch + a.d_branch;              // [B,T,C/Gx] attproj / fcproj
    float* d_ln = scratch + a.d_ln;                      // [B,T,C/Gx] ln1 / ln2 / lnf
    float* d_fch_gelu = scratch + a.d_fch_gelu;          // [B,T,4C/Gy]
    float* d_fch = scratch + a.d_fch;                    // [B,T,4C/Gy]
    float* d_atty = scratch + a.d_atty;                  // [B,T,C/Gy]
    float* d_qkv = scratch + a.d_qkv;                    // [B,T,3C/Gy]
    std::size_t const btcx_bytes = static_cast<std::size_t>(d.BT) * d.Cx * sizeof(float);
    std::size_t const btcy_bytes = static_cast<std::size_t>(d.BT) * d.Cy * sizeof(float);
    auto zero = [](float* buffer, std::size_t bytes) { std::memset(buffer, 0, bytes); };

    // The embedding's gradient is one block [Vp/Gy, C/Gx] for the LM head and the lookup, reduce-scattered over
    // Z at the end; without a Z split it is the shard itself.
    bool const z_split = z.size() > 1;
    float const* wte = z_split ? workspace + w.wte_gathered : param(Param::wte);
    float* dwte = z_split ? workspace + w.wte_grad : grad(Param::wte);
    GradWrite const dwte_write = z_split ? GradWrite::overwrite : write;

    // The logits buffer becomes dlogits in place: the logits are not needed again.
    float* dlogits = activation(a.logits);
    k.cross_entropy_backward(dlogits, activation(a.logits), activation(a.logsumexp), batch.targets,
                             activation(a.dlosses), d.BT, vocab.valid, vocab.rows, vocab.begin);
    zero(d_ln, btcx_bytes);
    k.linear_backward(d_ln, dwte, nullptr, dlogits, activation(a.lnf), wte, d.BT, d.Cx, d.Vpy, dwte_write);
    y.all_reduce(d_ln, static_cast<std::size_t>(d.BT * d.Cx));
    zero(d_residual_out, btcx_bytes);
    parallel_layernorm_backward(k, x, stats, d_residual_out, grad(Param::lnfw), grad(Param::lnfb), d_ln,
                                activation(a.residual3 + (d.L - 1) * a.BTCx), param(Param::lnfw),
                                activation(a.lnf_mean), activation(a.lnf_rstd), d.BT, d.Cx, d.C);

    std::int64_t const per_layer_qkvw = layout_.local_numel(Param::qkvw) / d.L;
    std::int64_t const per_layer_attprojw = layout_.local_numel(Param::attprojw) / d.L;
    std::int64_t const per_layer_fcw = layout_.local_numel(Param::fcw) / d.L;
    std::int64_t const per_layer_fcprojw = layout_.local_numel(Param::fcprojw) / d.L;
    for (int l = d.L - 1; l >= 0; --l) {
        float const* residual = l == 0 ? activation(a.encoded) : activation(a.residual3 + (l - 1) * a.BTCx);
        float const* ln1 = activation(a.ln1 + l * a.BTCx);
        float const* ln1_mean = activation(a.ln1_mean + l * a.BT);
        float const* ln1_rstd = activation(a.ln1_rstd + l * a.BT);
        float const* qkv = activation(a.qkv + l * a.BT3Cy);
        float const* atty = activation(a.atty + l * a.BTCy);
        float const* att = activation(a.att + l * a.att_size);
        float const* residual2 = activation(a.residual2 + l * a.BTCx);
        float const* ln2 = activation(a.ln2 + l * a.BTCx);
        float const* ln2_mean = activation(a.ln2_mean + l * a.BT);
        float const* ln2_rstd = activation(a.ln2_rstd + l * a.BT);
        float const* fch = activation(a.fch + l * a.BT4Cy);
        float const* fch_gelu = activation(a.fch_gelu + l * a.BT4Cy);
        std::int64_t const lCx = static_cast<std::int64_t>(l) * d.Cx, lCy = static_cast<std::int64_t>(l) * d.Cy;

        // residual3 = residual2 + fcproj: both receive d_residual_out. d_residual_in collects residual2's gradient.
        zero(d_residual_in, btcx_bytes);
        zero(d_branch, btcx_bytes);
        k.residual_backward(d_residual_in, d_branch, d_residual_out, d.BT * d.Cx);
        zero(d_fch_gelu, 4 * btcy_bytes);
        parallel_linear_backward(k, transposed, linear_workspace, d_fch_gelu,
                                 grad(Param::fcprojw) + l * per_layer_fcprojw, grad(Param::fcprojb) + lCx, d_branch,
                                 fch_gelu, param(Param::fcprojw) + l * per_layer_fcprojw, d.BT, 4 * d.Cy, d.Cx, write);
        zero(d_fch, 4 * btcy_bytes);
        k.gelu_backward(d_fch, fch, d_fch_gelu, d.BT * 4 * d.Cy);
        zero(d_ln, btcx_bytes);
        parallel_linear_backward(k, normal, linear_workspace, d_ln, grad(Param::fcw) + l * per_layer_fcw,
                                 grad(Param::fcb) + 4 * lCy, d_fch, ln2, param(Param::fcw) + l * per_layer_fcw, d.BT,
                                 d.Cx, 4 * d.Cy, write);
        parallel_layernorm_backward(k, x, stats, d_residual_in, grad(Param::ln2w) + lCx, grad(Param::ln2b) + lCx,
                                    d_ln, residual2, param(Param::ln2w) + lCx, ln2_mean, ln2_rstd, d.BT, d.Cx, d.C);

        // residual2 = residual + attproj: the same split, now from d_residual_in into d_residual_out.
        zero(d_residual_out, btcx_bytes);
        zero(d_branch, btcx_bytes);
        k.residual_backward(d_residual_out, d_branch, d_residual_in, d.BT * d.Cx);
        zero(d_atty, btcy_bytes);
        parallel_linear_backward(k, transposed, linear_workspace, d_atty,
                                 grad(Param::attprojw) + l * per_layer_attprojw, grad(Param::attprojb) + lCx, d_branch,
                                 atty, param(Param::attprojw) + l * per_layer_attprojw, d.BT, d.Cy, d.Cx, write);
        zero(d_qkv, 3 * btcy_bytes);
        k.attention_backward(d_qkv, d_atty, qkv, att, d.B, d.T, d.Cy, d.NHy);
        zero(d_ln, btcx_bytes);
        parallel_linear_backward(k, normal, linear_workspace, d_ln, grad(Param::qkvw) + l * per_layer_qkvw,
                                 grad(Param::qkvb) + 3 * lCy, d_qkv, ln1, param(Param::qkvw) + l * per_layer_qkvw,
                                 d.BT, d.Cx, 3 * d.Cy, write);
        parallel_layernorm_backward(k, x, stats, d_residual_out, grad(Param::ln1w) + lCx, grad(Param::ln1b) + lCx,
                                    d_ln, residual, param(Param::ln1w) + lCx, ln1_mean, ln1_rstd, d.BT, d.Cx, d.C);
    }
    // The lookup's gradient: the rows of this rank's vocabulary slice; wpe's on every Y rank (it is replicated).
    k.encoder_backward(dwte, grad(Param::wpe), d_residual_out, batch.tokens, d.B, d.T, d.Cx, vocab.begin, vocab.rows);
    if (z_split) {
        auto const shard = static_cast<std::size_t>(layout_.local_numel(Param::wte));
        if (write == GradWrite::overwrite) {
            z.reduce_scatter(dwte, grad(Param::wte), shard);
        } else {
            float* summed = workspace + w.wte_gathered;  // the gathered weights are no longer needed
            z.reduce_scatter(dwte, summed, shard);
            k.residual_forward(grad(Param::wte), grad(Param::wte), summed, static_cast<std::int64_t>(shard));
        }
    }
}

void Gpt::sync_gradients() {
    float* grads = gradients_.data<float>();
    grid_.comm(Group::z).all_reduce(grads + layout_.replicated_begin(),
                                    static_cast<std::size_t>(layout_.total() - layout_.replicated_begin()));
    // Data-parallel sum in large flat buckets: few collectives, none of them too large for one message.
    constexpr std::int64_t bucket = std::int64_t{1} << 24;
    Communicator& data = grid_.comm(Group::data);
    for (std::int64_t begin = 0; begin < layout_.total(); begin += bucket) {
        data.all_reduce(grads + begin, static_cast<std::size_t>(std::min(bucket, layout_.total() - begin)));
    }
}

double Gpt::gradient_norm() {
    double squares = 0.0;
    for (auto const& spec : gpt_parameter_specs(config_)) {
        if (layout_.owns(spec.id)) squares += backend_.sum_of_squares(grad(spec.id), layout_.local_numel(spec.id));
    }
    grid_.comm(Group::tensor).all_reduce(&squares, 1);
    return std::sqrt(squares);
}

Tensor Gpt::gather(Param id, bool gradient) {
    ShardSpec const& spec = layout_.spec(id);
    Tensor full({spec.layers * spec.rows * spec.cols}, DType::f32);
    float const* local = gradient ? grad(id) : param(id);
    if (layout_.owns(id) && grid_.coord(Axis::data) == 0) {
        for (std::int64_t i = 0; i < layout_.local_numel(id); ++i) full.data<float>()[layout_.serial_index(id, i)] = local[i];
    }
    grid_.comm(Group::world).all_reduce(full.data<float>(), static_cast<std::size_t>(full.numel()));
    return full;
}

}  // namespace axonn
