#include "axonn/model/gpt.h"

#include "axonn/core/error.h"
#include "axonn/core/trace.h"
#include "axonn/parallel/layernorm.h"
#include "axonn/parallel/linear.h"
#include "axonn/parallel/parameter_init.h"
#include "axonn/parallel/vocab_parallel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
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
// are refused before anything is computed.
void require_sizes_fit(LocalDims const& d) {
    long double const per_layer =
        static_cast<long double>(d.BT) * (16.0L * d.Cx + 16.0L * d.Cy + 8.0L + static_cast<long double>(d.NHy));
    long double const elements = d.L * per_layer + static_cast<long double>(d.BT) * (d.Vpy + 4.0L * d.Cx + 8.0L);
    require(elements < 0x1p62L, "{} sequences of {} tokens of this model need about {:.3g} activation values per "
            "rank, beyond what any machine holds: lower --batch or --seq, or use more ranks", d.B, d.T,
            static_cast<double>(elements));
}

// How many copies of a layer's inner activations are kept: one per layer, or (recomputing) one for the layer
// being recomputed. A layer's output is always kept: it is the next layer's input.
int activation_slots(LocalDims const& d, Recompute recompute) { return recompute == Recompute::layer ? 1 : d.L; }

// Offsets (in floats) of every activation buffer, for batches of up to maxB × maxT local rows. Per-layer buffers
// are stacked: slot s's copy starts at offset + s · stride. The backward's scratch lives in a second buffer.
struct ActivationLayout {
    std::int64_t BTCx, BT3Cy, BTCy, BT4Cy, BT, BNHyT;  // per-layer strides
    std::int64_t encoded, outputs, ln1, ln1_mean, ln1_rstd, qkv, atty, att_lse, attproj, residual2, ln2, ln2_mean,
        ln2_rstd, fch, fch_gelu, fcproj, lnf, lnf_mean, lnf_rstd, logits, losses, logsumexp, row_max, dlosses, total;
    // backward scratch, reused by every layer
    std::int64_t d_residual_out, d_residual_in, d_branch, d_ln, d_fch_gelu, d_fch, d_atty, d_qkv, grad_total;

    ActivationLayout(LocalDims const& d, Recompute recompute) {
        BT = d.BT;
        BTCx = BT * d.Cx;
        BTCy = BT * d.Cy;
        BT3Cy = 3 * BTCy;
        BT4Cy = 4 * BTCy;
        BNHyT = BT * d.NHy;
        std::int64_t const L = d.L, S = activation_slots(d, recompute);
        std::int64_t next = 0;
        auto take = [&next](std::int64_t size) { return std::exchange(next, next + size); };
        encoded = take(BTCx);
        outputs = take(L * BTCx);  // layer l's output, residual2 + fcproj: layer l + 1's input
        ln1 = take(S * BTCx);
        ln1_mean = take(S * BT);
        ln1_rstd = take(S * BT);
        qkv = take(S * BT3Cy);
        atty = take(S * BTCy);
        att_lse = take(S * BNHyT);
        attproj = take(S * BTCx);
        residual2 = take(S * BTCx);
        ln2 = take(S * BTCx);
        ln2_mean = take(S * BT);
        ln2_rstd = take(S * BT);
        fch = take(S * BT4Cy);
        fch_gelu = take(S * BT4Cy);
        fcproj = take(S * BTCx);
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

// One layer's activations: its input (the previous layer's output, or the embedding), the slot of its inner
// buffers, and its output.
struct LayerActivations {
    float* input;      // [B,T,C/Gx]
    float* ln1;        // [B,T,C/Gx]
    float* ln1_mean;   // [B,T]
    float* ln1_rstd;   // [B,T]
    float* qkv;        // [B,T,3C/Gy]
    float* atty;       // [B,T,C/Gy]
    float* att_lse;    // [B,NH/Gy,T]: each attention row's log-sum-exp
    float* attproj;    // [B,T,C/Gx]
    float* residual2;  // [B,T,C/Gx]
    float* ln2;        // [B,T,C/Gx]
    float* ln2_mean;   // [B,T]
    float* ln2_rstd;   // [B,T]
    float* fch;        // [B,T,4C/Gy]
    float* fch_gelu;   // [B,T,4C/Gy]
    float* fcproj;     // [B,T,C/Gx]
    float* output;     // [B,T,C/Gx]

    LayerActivations(float* base, ActivationLayout const& a, int l, int slot)
        : input(base + (l == 0 ? a.encoded : a.outputs + (l - 1) * a.BTCx)), ln1(base + a.ln1 + slot * a.BTCx),
          ln1_mean(base + a.ln1_mean + slot * a.BT), ln1_rstd(base + a.ln1_rstd + slot * a.BT),
          qkv(base + a.qkv + slot * a.BT3Cy), atty(base + a.atty + slot * a.BTCy),
          att_lse(base + a.att_lse + slot * a.BNHyT), attproj(base + a.attproj + slot * a.BTCx),
          residual2(base + a.residual2 + slot * a.BTCx), ln2(base + a.ln2 + slot * a.BTCx),
          ln2_mean(base + a.ln2_mean + slot * a.BT), ln2_rstd(base + a.ln2_rstd + slot * a.BT),
          fch(base + a.fch + slot * a.BT4Cy), fch_gelu(base + a.fch_gelu + slot * a.BT4Cy),
          fcproj(base + a.fcproj + slot * a.BTCx), output(base + a.outputs + l * a.BTCx) {}
};

// The largest Linear block [4C/G_y, C/G_x] a Z all-gather or reduce-scatter carries, and all four of a layer.
// A Linear's [rows/G_rows, cols/G_cols] block before the Z split: what its Z all-gather returns.
std::int64_t linear_block(ShardLayout const& layout, Param id) { return layout.block_rows(id) * layout.block_cols(id); }
std::int64_t max_linear_block(ShardLayout const& layout) {
    std::int64_t largest = 0;
    for (Param id : layer_linears) largest = std::max(largest, linear_block(layout, id));
    return largest;
}
std::int64_t layer_linear_blocks(ShardLayout const& layout) {
    std::int64_t total = 0;
    for (Param id : layer_linears) total += linear_block(layout, id);
    return total;
}
std::int64_t wte_block(LocalDims const& d) { return static_cast<std::int64_t>(d.Vpy) * d.Cx; }

// The embedding's block gathered over Z (and its gradient), which stay from the lookup to the LM head and through
// the backward.
std::int64_t wte_workspace_numel(LocalDims const& d, int z) { return z > 1 ? wte_block(d) : 0; }
// The embedding gradient's block in bf16 and the shard its reduce-scatter returns, with bf16 gradient communication.
std::int64_t wte_grad_sent_numel(LocalDims const& d, int z, DType grad_comm) {
    return grad_comm == DType::bf16 && z > 1 ? wte_block(d) + wte_block(d) / z : 0;
}

// The backend's bf16 copies of a GEMM's fp32 activation operands, in mixed precision: the operand the output rows
// come from (inp forward, dout backward: the LM head's dlogits the largest), and the weight gradient's inp.
// The staging buffer of the Linears' all-reduces in mixed precision (parallel/linear.h): the widest output or
// input gradient a tensor-parallel group sums, the logits the widest; none without a split of X or Y.
std::int64_t bf16_staging_numel(LocalDims const& d, GridShape const& grid, DType precision) {
    if (precision != DType::bf16 || (grid.x == 1 && grid.y == 1)) return 0;
    return d.BT * std::max<std::int64_t>({d.Vpy, 4LL * d.Cy, d.Cx});
}

std::int64_t bf16_operand_numel(LocalDims const& d, DType precision) {
    if (precision != DType::bf16) return 0;
    std::int64_t const widest_rows = std::max<std::int64_t>({d.Vpy, 4LL * d.Cy, d.Cx});
    std::int64_t const widest_input = std::max<std::int64_t>(4LL * d.Cy, d.Cx);
    return d.BT * (widest_rows + widest_input);
}
std::int64_t cached_weight_numel(LocalDims const& d, ShardLayout const& layout, GptOptions const& options) {
    return options.cache_weights ? d.L * layer_linear_blocks(layout) : 0;
}

// A ring of one layer's four Linears: a weight gradient's reduce-scatter has a layer's backward to finish in.
constexpr int scatter_ring = 4;

// The gradients that a GEMM writes in full; every other gradient is accumulated into by its kernel and must
// start from zero when the backward overwrites.
constexpr std::array<Param, 5> gemm_written_grads = {Param::wte, Param::qkvw, Param::attprojw, Param::fcw,
                                                     Param::fcprojw};

// A layer's tensors, in the order the gradient sync reports them once the layer's backward is done.
constexpr std::array<Param, 12> layer_params = {Param::fcprojw, Param::fcprojb, Param::ln2w,     Param::ln2b,
                                                Param::fcw,     Param::fcb,     Param::attprojw, Param::attprojb,
                                                Param::ln1w,    Param::ln1b,    Param::qkvw,     Param::qkvb};

}  // namespace

GptMemory gpt_memory(GptConfig const& config, GridShape const& grid, int local_batch, int seq,
                     GptOptions const& options) {
    ShardLayout const layout = gpt_layout(config, GridPosition{grid});
    std::int64_t const parameters = layout.total();
    std::int64_t const gemm_bytes = dtype_size(options.precision);  // per element of a GEMM's weight or operand
    bool const mixed = options.precision != DType::f32;
    LocalDims const dims(config, grid, local_batch, seq);
    require_sizes_fit(dims);
    ActivationLayout const activations(dims, options.recompute);
    std::int64_t const statistics_bytes = dims.BT * 2 * 8;
    // Each buffer is a tensor of at least one element.
    auto buffer = [](std::int64_t numel) { return std::max<std::int64_t>(1, numel); };
    std::int64_t const workspace_bytes =
        buffer(wte_workspace_numel(dims, grid.z)) * (gemm_bytes + 4) +
        buffer(WeightGather::buffer_numel(grid.z, max_linear_block(layout), cached_weight_numel(dims, layout, options))) *
            gemm_bytes +
        buffer(GradScatter::buffer_numel(grid.z, max_linear_block(layout), scatter_ring)) * 4 +
        buffer(GradScatter::staging_numel(grid.z, max_linear_block(layout), scatter_ring, options.grad_comm)) * 2 +
        buffer(wte_grad_sent_numel(dims, grid.z, options.grad_comm)) * 2 +
        buffer(GradientSync::mirror_numel(layout, grid.data, options.grad_comm)) * 2 +
        buffer(bf16_staging_numel(dims, grid, options.precision)) * gemm_bytes +
        bf16_operand_numel(dims, options.precision) * 2;
    return {parameters * 4 + (mixed ? parameters * gemm_bytes : 0), parameters * 4, 2 * parameters * 4,
            (activations.total + activations.grad_total) * 4 + statistics_bytes, workspace_bytes};
}

double Gpt::global_loss_weight(std::span<Batch const> passes) {
    double total = 0.0;
    for (Batch const& batch : passes) {
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(batch.B) * batch.T; ++i) {
            total += batch.targets[i] < 0 ? 0.0 : (batch.loss_mask ? batch.loss_mask[i] : 1.0);
        }
    }
    grid_.comm(Group::z).all_reduce(&total, 1);
    grid_.comm(Group::data).all_reduce(&total, 1);
    return total;
}

Gpt::Gpt(GptConfig const& config, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
         GptOptions const& options)
    : config_(config), backend_(backend), grid_(grid), max_batch_(local_batch), max_seq_(max_seq), options_(options),
      layout_(gpt_layout(config, GridPosition::of(grid))) {
    config_.validate();
    invariant(backend.gemm_dtype() == options.precision, "a model in {} needs a backend made for it, not {}",
              dtype_name(options.precision), dtype_name(backend.gemm_dtype()));
    require(local_batch > 0, "batch size must be positive, got {}", local_batch);
    require(max_seq > 0, "sequence length must be positive, got {}", max_seq);
    require(max_seq <= config.max_seq, "sequence length {} is longer than the model's context {}: lower --seq",
            max_seq, config.max_seq);
    GridShape const& shape = grid.shape();
    require_valid_grid(config_, shape, grid.world_size(), local_batch * shape.data * shape.z);
    LocalDims const dims(config_, shape, local_batch, max_seq);
    require_sizes_fit(dims);
    ActivationLayout const sizes(dims, options_.recompute);
    parameters_ = Tensor({layout_.total()}, DType::f32);
    if (options_.precision != DType::f32) gemm_weights_ = Tensor({layout_.total()}, options_.precision);
    gradients_ = Tensor({layout_.total()}, DType::f32);
    activations_ = Tensor({sizes.total}, DType::f32);
    activation_grads_ = Tensor({sizes.grad_total}, DType::f32);
    statistics_ = Tensor({dims.BT, 2}, DType::f64);
    std::int64_t const wte_numel = std::max<std::int64_t>(1, wte_workspace_numel(dims, shape.z));
    wte_gathered_ = Tensor({wte_numel}, options_.precision);
    wte_grad_block_ = Tensor({wte_numel}, DType::f32);
    wte_grad_sent_ =
        Tensor({std::max<std::int64_t>(1, wte_grad_sent_numel(dims, shape.z, options_.grad_comm))}, DType::bf16);
    activation_staging_ =
        Tensor({std::max<std::int64_t>(1, bf16_staging_numel(dims, shape, options_.precision))}, options_.precision);
    weights_ = std::make_unique<WeightGather>(grid.comm(Group::z_prefetch), options_.precision,
                                              max_linear_block(layout_), options_.overlap,
                                              cached_weight_numel(dims, layout_, options_));
    weight_grads_ = std::make_unique<GradScatter>(backend, grid.comm(Group::z), max_linear_block(layout_), scatter_ring,
                                                  options_.overlap, options_.grad_comm);
    sync_ = std::make_unique<GradientSync>(layout_, backend, grid.comm(Group::z), grid.comm(Group::data),
                                           *weight_grads_, options_.overlap, options_.grad_comm);
}

Gpt::~Gpt() = default;

std::vector<ParamSegment> Gpt::segments() const {
    std::vector<ParamSegment> segments;
    for (int id = 0; id < layout_.count(); ++id) {
        segments.push_back({layout_.offset(id), layout_.local_numel(id), layout_.param(id).decay});
    }
    return segments;
}

VocabSlice Gpt::vocab_slice() const {
    int const rows = config_.padded_vocab_size() / grid_.shape().y;
    int const begin = grid_.coord(Axis::y) * rows;
    return {begin, rows, std::clamp(config_.vocab_size - begin, 0, rows)};
}

void Gpt::init_weights(std::uint64_t seed) { init_parameters(layout_, params(), seed); }

float const* Gpt::logits() const {
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_), options_.recompute);
    return activations_.data<float>() + a.logits;
}

float const* Gpt::token_losses() const {
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_), options_.recompute);
    return activations_.data<float>() + a.losses;
}

LinearGroups Gpt::linear_groups(bool transposed) {
    Communicator &x = grid_.comm(Group::x), &y = grid_.comm(Group::y);
    bfloat16* staging = options_.precision == DType::bf16 ? activation_staging_.data<bfloat16>() : nullptr;
    return transposed ? LinearGroups{y, x, staging} : LinearGroups{x, y, staging};
}

void const* Gpt::gemm_weight(Param id, std::int64_t element) const {
    Tensor const& weights = options_.precision == DType::f32 ? parameters_ : gemm_weights_;
    std::int64_t const bytes = (layout_.offset(id) + element) * static_cast<std::int64_t>(dtype_size(weights.dtype()));
    return static_cast<char const*>(weights.raw_data()) + bytes;
}

Gpt::UpdateTarget Gpt::update_target() {
    if (options_.precision != DType::bf16) return {params(), nullptr};
    // The copy is current now (every forward refreshes it), and the update writes both alike.
    refresh_gemm_weights();
    return {parameters_.span<float>(), gemm_weights_.data<bfloat16>()};
}

void Gpt::refresh_gemm_weights() {
    if (options_.precision == DType::f32 || !gemm_weights_stale_) return;
    backend_.convert(gemm_weights_.raw_data(), options_.precision, parameters_.raw_data(), DType::f32, layout_.total());
    gemm_weights_stale_ = false;
}

WeightView Gpt::gathered_wte() const {
    if (grid_.shape().z > 1) return {wte_gathered_.raw_data(), options_.precision};
    return {gemm_weight(Param::wte), options_.precision};
}

// The weights' uses of a pass in execution order: each layer's four Linears forward; in training, then the
// backward's, last layer first, each recomputed layer's forward uses before its backward's.
std::vector<WeightUse> Gpt::weight_schedule(bool training) const {
    auto forward_uses = [&](int l) {
        std::array<WeightUse, layer_linears.size()> uses;
        for (std::size_t i = 0; i < layer_linears.size(); ++i) {
            Param const id = layer_linears[i];
            uses[i] = {gemm_weight(id, l * (layout_.local_numel(id) / config_.n_layer)), linear_block(layout_, id)};
        }
        return uses;
    };
    std::vector<WeightUse> schedule;
    for (int l = 0; l < config_.n_layer; ++l) {
        for (WeightUse const& u : forward_uses(l)) schedule.push_back(u);
    }
    if (!training) return schedule;
    for (int l = config_.n_layer - 1; l >= 0; --l) {
        auto const forward = forward_uses(l);
        if (options_.recompute == Recompute::layer) schedule.insert(schedule.end(), forward.begin(), forward.end());
        schedule.insert(schedule.end(), forward.rbegin(), forward.rend());
    }
    return schedule;
}

float Gpt::forward(Batch const& batch, double loss_weight_total) { return run_forward(batch, false, loss_weight_total); }

void Gpt::forward_cached(Batch const& batch, KvCache& cache) {
    invariant(batch.B == cache.batch() && cache.length() + batch.T <= cache.capacity(),
              "{} rows of {} tokens after position {} of a cache of {} rows of {}", batch.B, batch.T, cache.length(),
              cache.batch(), cache.capacity());
    run_forward(Batch{batch.B, batch.T, batch.tokens, nullptr, nullptr}, false, 0.0, &cache);
    cache.advance(batch.T);
}

float Gpt::train_forward(Batch const& batch, Pass const& pass) {
    invariant(batch.targets != nullptr, "a training pass needs targets");
    pass_ = pass;
    return run_forward(batch, true, pass.loss_weight_total);
}

float Gpt::run_forward(Batch const& batch, bool training, double loss_weight_total, KvCache* cache) {
    TraceSpan const span("forward", TraceTrack::steps);
    invariant(batch.B > 0 && batch.B <= max_batch_, "batch of {} sequences, the model was built for at most {}",
              batch.B, max_batch_);
    invariant(batch.T > 0 && batch.T <= max_seq_, "sequence of {} tokens, the model was built for at most {}",
              batch.T, max_seq_);
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_), options_.recompute);
    LocalDims const d(config_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    Communicator &x = grid_.comm(Group::x), &y = grid_.comm(Group::y), &z = grid_.comm(Group::z_prefetch);
    double* stats = statistics_.data<double>();
    VocabSlice const vocab = vocab_slice();

    // Weights change between steps: a step's first pass gathers them anew.
    if (!training || pass_.first) weights_->invalidate();
    refresh_gemm_weights();
    // The embedding block [Vp/G_y, C/G_x], gathered over Z once for the lookup, the LM head and the backward; the
    // first Linear's gather starts meanwhile.
    auto const wte_shard = static_cast<std::size_t>(z.size() > 1 ? layout_.local_numel(Param::wte) : 0);
    Collective wte_gather =
        options_.precision == DType::bf16
            ? z.start_all_gather(static_cast<bfloat16 const*>(gemm_weight(Param::wte)),
                                 wte_gathered_.data<bfloat16>(), wte_shard)
            : z.start_all_gather(param_values(Param::wte), wte_gathered_.data<float>(), wte_shard);
    if (!options_.overlap) wte_gather.wait();
    weights_->begin_pass(weight_schedule(training));
    wte_gather.wait();
    WeightView const wte = gathered_wte();
    // The positions' embeddings, added once over Y: those after the cached tokens' when continuing them.
    std::int64_t const first_position = cache != nullptr ? cache->length() : 0;
    float const* wpe = grid_.coord(Axis::y) == 0 ? param_values(Param::wpe) + first_position * d.Cx : nullptr;
    vocab_parallel_embedding_forward(k, y, vocab, activation(a.encoded), batch.tokens, wte, wpe, d.B, d.T, d.Cx);

    bool const recompute = options_.recompute == Recompute::layer;
    for (int l = 0; l < d.L; ++l) {
        TraceSpan const layer(TraceTrack::steps, [&] { return fmt::format("layer {}", l); });
        forward_layer(l, recompute ? 0 : l, batch, cache);
    }

    float const* residual = activation(a.outputs + (d.L - 1) * a.BTCx);
    parallel_layernorm_forward(k, x, stats, activation(a.lnf), activation(a.lnf_mean), activation(a.lnf_rstd),
                               residual, param_values(Param::lnfw), param_values(Param::lnfb), d.BT, d.Cx, d.C);
    // The LM head is the token embedding, transposed: logits[B,T,Vp/Gy] = AllReduce_X(lnf · wte_blkᵀ). The block
    // is already gathered, so the GEMM runs on it directly.
    parallel_linear_forward(k, linear_groups(false), options_.overlap, activation(a.logits), activation(a.lnf), wte,
                            nullptr, d.BT, d.Cx, d.Vpy);

    last_batch_ = batch;
    backward_ready_ = training;
    if (batch.targets == nullptr) return std::numeric_limits<float>::quiet_NaN();

    float* losses = activation(a.losses);
    float* dlosses = activation(a.dlosses);
    vocab_parallel_cross_entropy_forward(k, y, vocab, losses, activation(a.logsumexp), activation(a.row_max), stats,
                                         activation(a.logits), batch.targets, d.BT);
    // The mean over the tokens that count in the whole global batch, whose rows are split over data and Z: each
    // token's weight is its mask value, 0 if its target is ignored. With micro-batches, the step's total weight
    // (given) normalises every pass.
    std::array<double, 2> sums = {0.0, 0.0};  // Σ weight · loss, Σ weight
    for (std::int64_t i = 0; i < d.BT; ++i) {
        double const weight = batch.targets[i] < 0 ? 0.0 : (batch.loss_mask ? batch.loss_mask[i] : 1.0);
        sums[0] += weight * losses[i];
        sums[1] += weight;
        dlosses[i] = static_cast<float>(weight);
    }
    grid_.comm(Group::z).all_reduce(sums.data(), 2);
    grid_.comm(Group::data).all_reduce(sums.data(), 2);
    double const total = loss_weight_total > 0.0 ? loss_weight_total : sums[1];
    for (std::int64_t i = 0; i < d.BT; ++i) dlosses[i] = total > 0.0 ? static_cast<float>(dlosses[i] / total) : 0.0f;
    return total > 0.0 ? static_cast<float>(sums[0] / total) : 0.0f;
}

void Gpt::forward_layer(int l, int slot, Batch const& batch, KvCache* cache) {
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_), options_.recompute);
    LocalDims const d(config_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    Communicator& x = grid_.comm(Group::x);
    LinearGroups const normal = linear_groups(false), transposed = linear_groups(true);
    double* stats = statistics_.data<double>();
    LayerActivations const act(activations_.data<float>(), a, l, slot);
    std::int64_t const lCx = static_cast<std::int64_t>(l) * d.Cx, lCy = static_cast<std::int64_t>(l) * d.Cy;

    parallel_layernorm_forward(k, x, stats, act.ln1, act.ln1_mean, act.ln1_rstd, act.input, param_values(Param::ln1w) + lCx,
                               param_values(Param::ln1b) + lCx, d.BT, d.Cx, d.C);
    bool const overlap = options_.overlap;
    parallel_linear_forward(k, normal, overlap, act.qkv, act.ln1, weights_->next(), param_values(Param::qkvb) + 3 * lCy, d.BT,
                            d.Cx, 3 * d.Cy);
    if (cache != nullptr) {
        k.attention_cached(act.atty, act.att_lse, cache->keys(l), cache->values(l), act.qkv, d.B, d.T, cache->length(),
                           cache->capacity(), d.Cy, d.NHy);
    } else {
        k.attention_forward(act.atty, act.att_lse, act.qkv, d.B, d.T, d.Cy, d.NHy);
    }
    parallel_linear_forward(k, transposed, overlap, act.attproj, act.atty, weights_->next(),
                            param_values(Param::attprojb) + lCx, d.BT, d.Cy, d.Cx);
    k.residual_forward(act.residual2, act.input, act.attproj, d.BT * d.Cx);
    parallel_layernorm_forward(k, x, stats, act.ln2, act.ln2_mean, act.ln2_rstd, act.residual2,
                               param_values(Param::ln2w) + lCx, param_values(Param::ln2b) + lCx, d.BT, d.Cx, d.C);
    parallel_linear_forward(k, normal, overlap, act.fch, act.ln2, weights_->next(), param_values(Param::fcb) + 4 * lCy, d.BT,
                            d.Cx, 4 * d.Cy);
    k.gelu_forward(act.fch_gelu, act.fch, d.BT * 4 * d.Cy);
    parallel_linear_forward(k, transposed, overlap, act.fcproj, act.fch_gelu, weights_->next(),
                            param_values(Param::fcprojb) + lCx, d.BT, 4 * d.Cy, d.Cx);
    k.residual_forward(act.output, act.residual2, act.fcproj, d.BT * d.Cx);
}

void Gpt::backward() {
    TraceSpan const span("backward", TraceTrack::steps);
    invariant(backward_ready_, "backward() needs a train_forward() first");
    backward_ready_ = false;
    GradWrite const write = pass_.first ? GradWrite::overwrite : GradWrite::accumulate;
    if (write == GradWrite::overwrite) {
        for (int id = 0; id < layout_.count(); ++id) {
            if (std::find(gemm_written_grads.begin(), gemm_written_grads.end(), Param{id}) != gemm_written_grads.end()) {
                continue;
            }
            std::fill_n(grad(Param{id}), layout_.local_numel(id), 0.0f);
        }
    }
    if (pass_.last) sync_->begin(gradients_.data<float>());
    Batch const& batch = last_batch_;
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_), options_.recompute);
    LocalDims const d(config_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    Communicator &x = grid_.comm(Group::x), &z = grid_.comm(Group::z);
    double* stats = statistics_.data<double>();
    VocabSlice const vocab = vocab_slice();
    float* scratch = activation_grads_.data<float>();
    float* d_residual_out = scratch + a.d_residual_out;  // [B,T,C/Gx] gradient of the current layer's output
    float* d_ln = scratch + a.d_ln;                      // [B,T,C/Gx] lnf

    // The embedding's gradient is one block [Vp/Gy, C/Gx] for the LM head and the lookup, reduce-scattered over
    // Z at the end; without a Z split it is the shard itself.
    bool const z_split = z.size() > 1;
    WeightView const wte = gathered_wte();
    float* dwte = z_split ? wte_grad_block_.data<float>() : grad(Param::wte);
    GradWrite const dwte_write = z_split ? GradWrite::overwrite : write;

    // The logits buffer becomes dlogits in place: the logits are not needed again. The LM head's input gradient
    // is all-reduced over Y while its weight gradient is computed (OAR); its weight gradient waits in its block for
    // the lookup's, and is reduce-scattered at the end.
    float* dlogits = activation(a.logits);
    k.cross_entropy_backward(dlogits, activation(a.logits), activation(a.logsumexp), batch.targets,
                             activation(a.dlosses), d.BT, vocab.valid, vocab.rows, vocab.begin);
    parallel_input_gradient(k, linear_groups(false), options_.overlap, d_ln, dlogits, wte, d.BT, d.Cx, d.Vpy, [&] {
        k.linear_backward_weight(dwte, nullptr, dlogits, activation(a.lnf), d.BT, d.Cx, d.Vpy, dwte_write);
    });
    std::memset(d_residual_out, 0, static_cast<std::size_t>(d.BT) * d.Cx * sizeof(float));
    parallel_layernorm_backward(k, x, stats, d_residual_out, grad(Param::lnfw), grad(Param::lnfb), d_ln,
                                activation(a.outputs + (d.L - 1) * a.BTCx), param_values(Param::lnfw),
                                activation(a.lnf_mean), activation(a.lnf_rstd), d.BT, d.Cx, d.C);
    if (pass_.last) sync_->final({{Param::lnfw}, {Param::lnfb}});

    bool const recompute = options_.recompute == Recompute::layer;
    for (int l = d.L - 1; l >= 0; --l) {
        TraceSpan const layer(TraceTrack::steps, [&] { return fmt::format("layer {}", l); });
        if (recompute) {
            TraceSpan const recomputation("recompute", TraceTrack::steps);
            forward_layer(l, 0, batch);
        }
        backward_layer(l, recompute ? 0 : l, batch, write);
        if (!pass_.last) continue;
        std::vector<GradSlice> slices;
        for (Param id : layer_params) slices.push_back({id, l});
        sync_->final(slices);
    }
    // The lookup's gradient: the rows of this rank's vocabulary slice; wpe's on every Y rank (it is replicated).
    k.encoder_backward(dwte, grad(Param::wpe), d_residual_out, batch.tokens, d.B, d.T, d.Cx, vocab.begin, vocab.rows);
    if (z_split) {
        auto const shard = static_cast<std::size_t>(layout_.local_numel(Param::wte));
        // The gathered block is no longer needed: it takes the scattered sum to add (a shard, 1/G_z of the block:
        // its bytes suffice in bf16 too).
        auto* gathered = static_cast<float*>(wte_gathered_.raw_data());
        float* scattered = write == GradWrite::overwrite ? grad(Param::wte) : gathered;
        if (options_.grad_comm == DType::bf16) {
            auto const block = static_cast<std::int64_t>(shard) * z.size();
            bfloat16* sent = wte_grad_sent_.data<bfloat16>();
            bfloat16* received = sent + block;
            k.convert(sent, DType::bf16, dwte, DType::f32, block);
            z.start_reduce_scatter(sent, received, shard).wait();
            k.convert(scattered, DType::f32, received, DType::bf16, static_cast<std::int64_t>(shard));
        } else {
            z.start_reduce_scatter(dwte, scattered, shard).wait();
        }
        if (write == GradWrite::accumulate) {
            k.residual_forward(grad(Param::wte), grad(Param::wte), gathered, static_cast<std::int64_t>(shard));
        }
    }
    if (pass_.last) {
        sync_->final({{Param::wte}, {Param::wpe}});
        sync_->finish();
    } else {
        weight_grads_->complete_all();
    }
}

void Gpt::backward_layer(int l, int slot, Batch const& batch, GradWrite write) {
    ActivationLayout const a(LocalDims(config_, grid_.shape(), max_batch_, max_seq_), options_.recompute);
    LocalDims const d(config_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    Communicator& x = grid_.comm(Group::x);
    LinearGroups const normal = linear_groups(false), transposed = linear_groups(true);
    GradScatter& scatter = *weight_grads_;
    bool const overlap = options_.overlap;
    double* stats = statistics_.data<double>();
    float* scratch = activation_grads_.data<float>();
    float* d_residual_out = scratch + a.d_residual_out;  // [B,T,C/Gx] gradient of the layer's output, then input
    float* d_residual_in = scratch + a.d_residual_in;    // [B,T,C/Gx] gradient of residual2
    float* d_branch = scratch + a.d_branch;              // [B,T,C/Gx] attproj / fcproj
    float* d_ln = scratch + a.d_ln;                      // [B,T,C/Gx] ln1 / ln2
    float* d_fch_gelu = scratch + a.d_fch_gelu;          // [B,T,4C/Gy]
    float* d_fch = scratch + a.d_fch;                    // [B,T,4C/Gy]
    float* d_atty = scratch + a.d_atty;                  // [B,T,C/Gy]
    float* d_qkv = scratch + a.d_qkv;                    // [B,T,3C/Gy]
    LayerActivations const act(activations_.data<float>(), a, l, slot);
    std::int64_t const lCx = static_cast<std::int64_t>(l) * d.Cx, lCy = static_cast<std::int64_t>(l) * d.Cy;
    auto per_layer = [&](Param id) { return l * (layout_.local_numel(id) / d.L); };
    std::size_t const btcx_bytes = static_cast<std::size_t>(d.BT) * d.Cx * sizeof(float);
    std::size_t const btcy_bytes = static_cast<std::size_t>(d.BT) * d.Cy * sizeof(float);
    auto zero = [](float* buffer, std::size_t bytes) { std::memset(buffer, 0, bytes); };

    // output = residual2 + fcproj: both receive d_residual_out. d_residual_in collects residual2's gradient.
    zero(d_residual_in, btcx_bytes);
    zero(d_branch, btcx_bytes);
    k.residual_backward(d_residual_in, d_branch, d_residual_out, d.BT * d.Cx);
    parallel_linear_backward(k, transposed, scatter, overlap, d_fch_gelu,
                             grad(Param::fcprojw) + per_layer(Param::fcprojw), grad(Param::fcprojb) + lCx, d_branch,
                             act.fch_gelu, weights_->next(), d.BT, 4 * d.Cy, d.Cx, write);
    zero(d_fch, 4 * btcy_bytes);
    k.gelu_backward(d_fch, act.fch, d_fch_gelu, d.BT * 4 * d.Cy);
    parallel_linear_backward(k, normal, scatter, overlap, d_ln, grad(Param::fcw) + per_layer(Param::fcw),
                             grad(Param::fcb) + 4 * lCy, d_fch, act.ln2, weights_->next(), d.BT, d.Cx, 4 * d.Cy,
                             write);
    parallel_layernorm_backward(k, x, stats, d_residual_in, grad(Param::ln2w) + lCx, grad(Param::ln2b) + lCx, d_ln,
                                act.residual2, param_values(Param::ln2w) + lCx, act.ln2_mean, act.ln2_rstd, d.BT, d.Cx, d.C);

    // residual2 = residual + attproj: the same split, now from d_residual_in into d_residual_out.
    zero(d_residual_out, btcx_bytes);
    zero(d_branch, btcx_bytes);
    k.residual_backward(d_residual_out, d_branch, d_residual_in, d.BT * d.Cx);
    parallel_linear_backward(k, transposed, scatter, overlap, d_atty, grad(Param::attprojw) + per_layer(Param::attprojw),
                             grad(Param::attprojb) + lCx, d_branch, act.atty, weights_->next(), d.BT, d.Cy, d.Cx,
                             write);
    zero(d_qkv, 3 * btcy_bytes);
    k.attention_backward(d_qkv, d_atty, act.qkv, act.atty, act.att_lse, d.B, d.T, d.Cy, d.NHy);
    parallel_linear_backward(k, normal, scatter, overlap, d_ln, grad(Param::qkvw) + per_layer(Param::qkvw),
                             grad(Param::qkvb) + 3 * lCy, d_qkv, act.ln1, weights_->next(), d.BT, d.Cx, 3 * d.Cy,
                             write);
    parallel_layernorm_backward(k, x, stats, d_residual_out, grad(Param::ln1w) + lCx, grad(Param::ln1b) + lCx, d_ln,
                                act.input, param_values(Param::ln1w) + lCx, act.ln1_mean, act.ln1_rstd, d.BT, d.Cx, d.C);
}

double Gpt::gradient_norm() {
    double squares = 0.0;
    for (int id = 0; id < layout_.count(); ++id) {
        if (layout_.owns(id)) squares += backend_.sum_of_squares(grad(Param{id}), layout_.local_numel(id));
    }
    grid_.comm(Group::tensor).all_reduce(&squares, 1);
    return std::sqrt(squares);
}

Tensor Gpt::gather(Param id, bool gradient) {
    ShardSpec const& spec = layout_.spec(id);
    Tensor full({spec.layers * spec.rows * spec.cols}, DType::f32);
    float const* local = gradient ? grad(id) : param_values(id);
    if (layout_.owns(id) && grid_.coord(Axis::data) == 0) {
        for (std::int64_t i = 0; i < layout_.local_numel(id); ++i) full.data<float>()[layout_.serial_index(id, i)] = local[i];
    }
    grid_.comm(Group::world).all_reduce(full.data<float>(), static_cast<std::size_t>(full.numel()));
    return full;
}

}  // namespace axonn
