#include "axonn/model/gpt.h"

#include "axonn/core/error.h"
#include "axonn/core/trace.h"
#include "axonn/kernels/attention_plan.h"
#include "axonn/parallel/batch_sum.h"
#include "axonn/parallel/linear.h"
#include "axonn/parallel/parameter_init.h"
#include "axonn/parallel/serial_gather.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <limits>
#include <utility>

namespace axonn {
namespace {

// This process's share of the model's dimensions.
struct LocalDims {
    int B, T, C, Cx, Cy, NHy, NKVy, hs, Wy, Uy, Fy, L, Vpy;
    std::int64_t BT;

    LocalDims(Architecture const& a, GridShape const& grid, int B_, int T_)
        : B(B_), T(T_), C(a.width), Cx(a.width / grid.x), Cy(a.width / grid.y), NHy(a.heads / grid.y),
          NKVy(std::max(1, a.kv_heads / grid.y)), hs(a.head_size()), Wy((NHy + 2 * NKVy) * hs), Uy(a.mlp_rows() / grid.y),
          Fy(a.mlp_width / grid.y), L(a.layers), Vpy(a.padded_vocab / grid.y), BT(static_cast<std::int64_t>(B_) * T_) {}
};

// Every buffer size below is computed in 64 bits; a model, batch and sequence whose activations would not fit
// are refused before anything is computed.
void require_sizes_fit(LocalDims const& d) {
    long double const per_layer = static_cast<long double>(d.BT) *
                                  (16.0L * d.Cx + 2.0L * d.Wy + d.Cy + 3.0L * d.Uy + 2.0L * d.Fy + 8.0L + d.NHy);
    long double const elements = d.L * per_layer + static_cast<long double>(d.BT) * (d.Vpy + 4.0L * d.Cx + 8.0L);
    require(elements < 0x1p62L, "{} sequences of {} tokens of this model need about {:.3g} activation values per "
            "rank, beyond what any machine holds: lower --batch or --seq, or use more ranks", d.B, d.T,
            static_cast<double>(elements));
}

// How many copies of a layer's inner activations are kept: one per layer, or (recomputing) one for the layer
// being recomputed. A layer's output is always kept: it is the next layer's input.
int activation_slots(LocalDims const& d, Recompute recompute) { return recompute == Recompute::layer ? 1 : d.L; }

// The token rows whose logits are held at once: a chunk's (GptOptions::logit_rows), or every row's.
std::int64_t logit_rows_held(LocalDims const& d, GptOptions const& options) {
    return options.logit_rows > 0 ? std::min<std::int64_t>(d.BT, options.logit_rows) : d.BT;
}

// Offsets (in floats) of every activation buffer, for batches of up to maxB × maxT local rows. Per-layer buffers
// are stacked: slot s's copy starts at offset + s · stride. The backward's scratch lives in a second buffer.
// Widths: Wy a token's [q | k | v] of this rank's heads, Uy the MLP's first Linear's rows here (F/G_y, or gate and
// up's 2F/G_y), Fy the MLP's hidden width here.
struct ActivationLayout {
    std::int64_t BTCx, BTWy, BTCy, BTUy, BTFy, BT, BNHyT;  // per-layer strides
    std::int64_t encoded, outputs, ln1, ln1_mean, ln1_rstd, qkv, atty, att_lse, residual2, ln2, ln2_mean, ln2_rstd, fch,
        fch_gelu, lnf, lnf_mean, lnf_rstd, logits, losses, logsumexp, row_max, dlosses, total;
    // backward scratch, reused by every layer
    std::int64_t d_residual_out, d_residual_in, d_branch, d_ln, d_fch_gelu, d_fch, d_atty, d_qkv, grad_total;

    ActivationLayout(LocalDims const& d, GptOptions const& options) {
        BT = d.BT;
        BTCx = BT * d.Cx;
        BTCy = BT * d.Cy;
        BTWy = BT * d.Wy;
        BTUy = BT * d.Uy;
        BTFy = BT * d.Fy;
        BNHyT = BT * d.NHy;
        std::int64_t const L = d.L, S = activation_slots(d, options.recompute);
        std::int64_t next = 0;
        auto take = [&next](std::int64_t size) { return std::exchange(next, next + size); };
        encoded = take(BTCx);
        outputs = take(L * BTCx);  // layer l's output, residual2 + the MLP's projection: layer l + 1's input
        ln1 = take(S * BTCx);
        ln1_mean = take(S * BT);
        ln1_rstd = take(S * BT);
        qkv = take(S * BTWy);
        atty = take(S * BTCy);
        att_lse = take(S * BNHyT);
        residual2 = take(S * BTCx);  // the layer's input + attention's projection
        ln2 = take(S * BTCx);
        ln2_mean = take(S * BT);
        ln2_rstd = take(S * BT);
        fch = take(S * BTUy);
        fch_gelu = take(S * BTFy);
        lnf = take(BTCx);
        lnf_mean = take(BT);
        lnf_rstd = take(BT);
        logits = take(logit_rows_held(d, options) * d.Vpy);  // one chunk's
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
        d_fch_gelu = take(BTFy);
        d_fch = take(BTUy);
        d_atty = take(BTCy);
        d_qkv = take(BTWy);
        grad_total = next;
    }
};

// One layer's activations: its input (the previous layer's output, or the embedding), the slot of its inner
// buffers, and its output.
struct LayerActivations {
    float* input;      // [B,T,C/Gx]
    float* ln1;        // [B,T,C/Gx]
    float* ln1_mean;   // [B,T] (LayerNorm only)
    float* ln1_rstd;   // [B,T]
    float* qkv;        // [B,T,Wy]: this rank's heads' [q | k | v], rotated (Llama)
    float* atty;       // [B,T,C/Gy]
    float* att_lse;    // [B,NH/Gy,T]: each attention row's log-sum-exp
    float* residual2;  // [B,T,C/Gx]: input + attention's projection, which the projection writes first
    float* ln2;        // [B,T,C/Gx]
    float* ln2_mean;   // [B,T] (LayerNorm only)
    float* ln2_rstd;   // [B,T]
    float* fch;        // [B,T,Uy]: the MLP's first Linear's output
    float* fch_gelu;   // [B,T,Fy]: its activation (gelu, or silu(gate)·up)
    float* output;     // [B,T,C/Gx]: residual2 + the MLP's projection, which the projection writes first

    LayerActivations(float* base, ActivationLayout const& a, int l, int slot)
        : input(base + (l == 0 ? a.encoded : a.outputs + (l - 1) * a.BTCx)), ln1(base + a.ln1 + slot * a.BTCx),
          ln1_mean(base + a.ln1_mean + slot * a.BT), ln1_rstd(base + a.ln1_rstd + slot * a.BT),
          qkv(base + a.qkv + slot * a.BTWy), atty(base + a.atty + slot * a.BTCy),
          att_lse(base + a.att_lse + slot * a.BNHyT), residual2(base + a.residual2 + slot * a.BTCx),
          ln2(base + a.ln2 + slot * a.BTCx), ln2_mean(base + a.ln2_mean + slot * a.BT),
          ln2_rstd(base + a.ln2_rstd + slot * a.BT), fch(base + a.fch + slot * a.BTUy),
          fch_gelu(base + a.fch_gelu + slot * a.BTFy), output(base + a.outputs + l * a.BTCx) {}
};

// A Linear's [rows/G_rows, cols/G_cols] block before the Z split: what its Z all-gather returns.
std::int64_t linear_block(ShardLayout const& layout, int id) { return layout.block_rows(id) * layout.block_cols(id); }
// The largest Linear block a Z all-gather or reduce-scatter carries, and all four of a layer.
std::int64_t max_linear_block(ShardLayout const& layout, Architecture const& a) {
    std::int64_t largest = 0;
    for (int id : a.layer_linears()) largest = std::max(largest, linear_block(layout, id));
    return largest;
}

std::int64_t layer_linear_blocks(ShardLayout const& layout, Architecture const& a) {
    std::int64_t total = 0;
    for (int id : a.layer_linears()) total += linear_block(layout, id);
    return total;
}
std::int64_t vocab_block(LocalDims const& d) { return static_cast<std::int64_t>(d.Vpy) * d.Cx; }
// The vocabulary blocks: the embedding's, and an untied LM head's.
int vocab_blocks(Architecture const& a) { return a.tied_head ? 1 : 2; }

// The largest output or input gradient a Linear has here: a chunk of the logits, or a layer's Linears' outputs and
// inputs.
std::int64_t largest_linear_output(LocalDims const& d, GptOptions const& options) {
    return std::max(logit_rows_held(d, options) * d.Vpy, d.BT * std::max<std::int64_t>({d.Wy, d.Uy, d.Fy, d.Cx}));
}

// The staging buffer of the Linears' all-reduces in mixed precision (parallel/linear.h): the largest output or
// input gradient a tensor-parallel group sums; none without a split of X or Y.
std::int64_t bf16_staging_numel(LocalDims const& d, GridShape const& grid, GptOptions const& options) {
    if (options.precision != DType::bf16 || (grid.x == 1 && grid.y == 1)) return 0;
    return largest_linear_output(d, options);
}

// The backend's bf16 copies of fp32 activation operands, in mixed precision: a backward's dout, held for its two
// GEMMs (the LM head's dlogits the largest); a forward's inp or attention's qkv (when attention runs in bf16); the
// weight gradient's inp or attention's dout.
std::int64_t bf16_operand_numel(LocalDims const& d, GptOptions const& options) {
    if (options.precision != DType::bf16) return 0;
    std::int64_t const widest_input = std::max<std::int64_t>({d.Fy, d.Cx, d.Cy});
    std::int64_t const attention_qkv = attention_plan(options.precision, d.T).in_bf16 ? d.Wy : 0;
    return largest_linear_output(d, options) + d.BT * (std::max(widest_input, attention_qkv) + widest_input);
}
std::int64_t cached_weight_numel(LocalDims const& d, ShardLayout const& layout, Architecture const& a,
                                 GptOptions const& options) {
    return options.cache_weights ? d.L * layer_linear_blocks(layout, a) : 0;
}

// A ring of one layer's four Linears: a weight gradient's reduce-scatter has a layer's backward to finish in.
constexpr int scatter_ring = 4;

// Whether a GEMM writes the gradient in full (the Linears' weights and the tied embedding, whose LM head's GEMM
// writes first); every other gradient is accumulated into by its kernel and must start from zero when the
// backward overwrites.
bool gemm_written(Architecture const& a, int id) {
    DecoderParams const& p = a.params;
    return id == p.head || id == p.qkvw || id == p.attprojw || id == p.fcw || id == p.fcprojw;
}

// A layer's tensors, in the order the gradient sync reports them once the layer's backward is done.
std::vector<int> layer_params(Architecture const& a) {
    DecoderParams const& p = a.params;
    std::vector<int> ids;
    for (int id : {p.fcprojw, p.fcprojb, p.ln2w, p.ln2b, p.fcw, p.fcb, p.attprojw, p.attprojb, p.ln1w, p.ln1b, p.qkvw,
                   p.qkvb}) {
        if (id >= 0) ids.push_back(id);
    }
    return ids;
}

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

// GPT-2's shape for another family's callers that ask a Gpt for its config (the vocabulary, the context).
GptConfig shape_as_gpt(Architecture const& a) {
    GptConfig config;
    config.name = a.family;
    config.vocab_size = a.vocab_size;
    config.n_layer = a.layers;
    config.n_head = a.heads;
    config.n_embd = a.width;
    config.max_seq = a.context;
    return config;
}

}  // namespace

GptMemory decoder_memory(Architecture const& architecture, GridShape const& grid, int local_batch, int seq,
                         GptOptions const& options) {
    ShardLayout const layout(architecture.declarations, GridPosition{grid});
    std::int64_t const parameters = layout.total();
    std::int64_t const gemm_bytes = dtype_size(options.precision);  // per element of a GEMM's weight or operand
    bool const mixed = options.precision != DType::f32;
    LocalDims const dims(architecture, grid, local_batch, seq);
    require_sizes_fit(dims);
    ActivationLayout const activations(dims, options);
    std::int64_t const statistics_bytes = dims.BT * 2 * 8;
    std::int64_t const max_block = max_linear_block(layout, architecture);
    // Each buffer is a tensor of at least one element.
    auto buffer = [](std::int64_t numel) { return std::max<std::int64_t>(1, numel); };
    std::int64_t const workspace_bytes =
        VocabBlocks::workspace_bytes(grid.z, vocab_blocks(architecture), vocab_block(dims), options.precision,
                                     options.grad_scatter_comm) +
        buffer(WeightGather::buffer_numel(grid.z, max_block, cached_weight_numel(dims, layout, architecture, options))) *
            gemm_bytes +
        buffer(GradScatter::buffer_numel(grid.z, max_block, scatter_ring)) * 4 +
        buffer(GradScatter::staging_numel(grid.z, max_block, scatter_ring, options.grad_scatter_comm)) * 2 +
        buffer(GradientSync::mirror_numel(layout, grid.data, options.grad_sum_comm)) * 2 +
        buffer(bf16_staging_numel(dims, grid, options)) * gemm_bytes +
        ReplicatedRowSum::workspace_bytes(layout, grid.y, options.grad_sum_comm) +
        bf16_operand_numel(dims, options) * 2;
    return {parameters * 4 + (mixed ? parameters * gemm_bytes : 0), parameters * 4, 2 * parameters * 4,
            (activations.total + activations.grad_total) * 4 + statistics_bytes, workspace_bytes};
}

GptMemory gpt_memory(GptConfig const& config, GridShape const& grid, int local_batch, int seq,
                     GptOptions const& options) {
    return decoder_memory(gpt2_architecture(config), grid, local_batch, seq, options);
}

double Gpt::global_loss_weight(std::span<Batch const> passes) {
    double total = 0.0;
    for (Batch const& batch : passes) {
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(batch.B) * batch.T; ++i) {
            total += token_weight(batch, i);
        }
    }
    return sum_over_batch(grid_, total);
}

Gpt::Gpt(GptConfig const& config, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
         GptOptions const& options)
    : Gpt((config.validate(), gpt2_architecture(config)), backend, grid, local_batch, max_seq, options) {
    config_ = config;
}

Gpt::Gpt(Architecture architecture, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
         GptOptions const& options)
    : config_(shape_as_gpt(architecture)), arch_(std::move(architecture)), backend_(backend), grid_(grid),
      max_batch_(local_batch), max_seq_(max_seq), options_(options),
      layout_(arch_.declarations, GridPosition::of(grid)) {
    invariant(backend.gemm_dtype() == options.precision, "a model in {} needs a backend made for it, not {}",
              dtype_name(options.precision), dtype_name(backend.gemm_dtype()));
    require(local_batch > 0, "batch size must be positive, got {}", local_batch);
    require(max_seq > 0, "sequence length must be positive, got {}", max_seq);
    require(max_seq <= arch_.context, "sequence length {} is longer than the model's context {}: lower --seq",
            max_seq, arch_.context);
    GridShape const& shape = grid.shape();
    require_valid_grid(arch_.declarations, shape, grid.world_size(), local_batch * shape.data * shape.z);
    LocalDims const dims(arch_, shape, local_batch, max_seq);
    require_sizes_fit(dims);
    ActivationLayout const sizes(dims, options_);
    // Everything the kernels read and write lives in the backend's memory.
    Memory const memory = backend.memory();
    parameters_ = Tensor({layout_.total()}, DType::f32, memory);
    if (options_.precision != DType::f32) gemm_weights_ = Tensor({layout_.total()}, options_.precision, memory);
    gradients_ = Tensor({layout_.total()}, DType::f32, memory);
    activations_ = Tensor({sizes.total}, DType::f32, memory);
    activation_grads_ = Tensor({sizes.grad_total}, DType::f32, memory);
    statistics_ = Tensor({dims.BT, 2}, DType::f64, memory);
    vocab_ = std::make_unique<VocabBlocks>(grid, backend, vocab_blocks(arch_), vocab_block(dims), options_.precision,
                                           options_.grad_scatter_comm, options_.overlap);
    activation_staging_ = Tensor({std::max<std::int64_t>(1, bf16_staging_numel(dims, shape, options_))},
                                 options_.precision, memory);
    if (memory != Memory::host) {
        batch_ids_ = Tensor({2, dims.BT}, DType::i32, memory);
        host_losses_.resize(static_cast<std::size_t>(dims.BT));
        host_dlosses_.resize(static_cast<std::size_t>(dims.BT));
    }
    replicated_rows_ = std::make_unique<ReplicatedRowSum>(grid, backend, layout_, options_.grad_sum_comm);
    step_ = std::make_unique<StepCollectives>(
        grid, backend, layout_,
        StepCollectivesOptions{.precision = options_.precision,
                               .max_block_numel = max_linear_block(layout_, arch_),
                               .cached_numel = cached_weight_numel(dims, layout_, arch_, options_),
                               .scatter_ring = scatter_ring,
                               .overlap = options_.overlap,
                               .grad_scatter_comm = options_.grad_scatter_comm,
                               .grad_sum_comm = options_.grad_sum_comm});
}

Gpt::~Gpt() = default;

std::vector<ParamSegment> Gpt::segments() const { return param_segments(layout_); }

VocabSlice Gpt::vocab_slice() const { return axonn::vocab_slice(grid_, arch_.padded_vocab, arch_.vocab_size); }

void Gpt::init_weights(std::uint64_t seed) {
    if (in_host_memory()) {
        init_parameters(layout_, params(), seed);
        return;
    }
    // Drawn on the host (the RNG is a host function of each element's serial index), then copied over.
    Tensor drawn({layout_.total()}, DType::f32);
    init_parameters(layout_, drawn.span<float>(), seed);
    backend_.copy_from_host(parameters_.data<float>(), drawn.data<float>(), static_cast<std::int64_t>(drawn.bytes()));
    gemm_weights_stale_ = true;
}

void Gpt::copy_parameters_to_host(std::span<float> out) const {
    invariant(static_cast<std::int64_t>(out.size()) == layout_.total(), "{} values for {} parameters", out.size(),
              layout_.total());
    backend_.copy_to_host(out.data(), parameters_.data<float>(), static_cast<std::int64_t>(parameters_.bytes()));
}

void Gpt::copy_parameters_from_host(std::span<float const> in) {
    invariant(static_cast<std::int64_t>(in.size()) == layout_.total(), "{} values for {} parameters", in.size(),
              layout_.total());
    backend_.copy_from_host(parameters_.data<float>(), in.data(), static_cast<std::int64_t>(parameters_.bytes()));
    gemm_weights_stale_ = true;
}

std::int64_t logit_chunks(std::int64_t rows, int logit_rows) {
    return logit_rows > 0 ? std::max<std::int64_t>(1, (rows + logit_rows - 1) / logit_rows) : 1;
}

std::int64_t Gpt::logit_capacity() const {
    return logit_rows_held(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
}

float const* Gpt::logits() const {
    invariant(logits_held_, "the last forward computed its logits in chunks of {} rows and holds none",
              options_.logit_rows);
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    return activations_.data<float>() + a.logits;
}

float const* Gpt::token_losses() const {
    if (!in_host_memory()) return host_losses_.data();
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    return activations_.data<float>() + a.losses;
}

Batch Gpt::batch_for_kernels(Batch const& batch) {
    if (in_host_memory()) return batch;
    std::int64_t const bytes = static_cast<std::int64_t>(batch.B) * batch.T * static_cast<std::int64_t>(sizeof(std::int32_t));
    std::int32_t* tokens = batch_ids_.data<std::int32_t>();
    std::int32_t* targets = tokens + batch_ids_.shape()[1];
    backend_.copy_from_host(tokens, batch.tokens, bytes);
    if (batch.targets != nullptr) backend_.copy_from_host(targets, batch.targets, bytes);
    return {batch.B, batch.T, tokens, batch.targets != nullptr ? targets : nullptr, batch.loss_mask};
}

LinearGroups Gpt::linear_groups(bool transposed) {
    bfloat16* staging = options_.precision == DType::bf16 ? activation_staging_.data<bfloat16>() : nullptr;
    return axonn::linear_groups(grid_, transposed, staging);
}

void const* Gpt::gemm_weight(int id, std::int64_t element) const {
    Tensor const& weights = options_.precision == DType::f32 ? parameters_ : gemm_weights_;
    std::int64_t const bytes = (layout_.offset(id) + element) * static_cast<std::int64_t>(dtype_size(weights.dtype()));
    return static_cast<char const*>(weights.raw_data()) + bytes;
}

float const* Gpt::layer_values(int id, std::int64_t layer_offset) const {
    return id < 0 ? nullptr : param_values(id) + layer_offset;
}

float* Gpt::layer_grad(int id, std::int64_t layer_offset) { return id < 0 ? nullptr : grad(id) + layer_offset; }

Gpt::UpdateTarget Gpt::update_target() {
    // Views of the backend's buffers, which only its operations read (on a GPU the host cannot).
    auto const numel = static_cast<std::size_t>(layout_.total());
    std::span<float> const params(parameters_.data<float>(), numel);
    std::span<float const> const grads(gradients_.data<float>(), numel);
    if (options_.precision != DType::bf16) return {params, grads, nullptr};
    // The copy is current now (every forward refreshes it), and the update writes both alike.
    refresh_gemm_weights();
    return {params, grads, gemm_weights_.data<bfloat16>()};
}

void Gpt::refresh_gemm_weights() {
    if (options_.precision == DType::f32 || !gemm_weights_stale_) return;
    backend_.convert(gemm_weights_.raw_data(), options_.precision, parameters_.raw_data(), DType::f32, layout_.total());
    gemm_weights_stale_ = false;
}

WeightView Gpt::gathered_vocab_block(int which) const { return vocab_->block(which, gemm_weight(vocab_param(which))); }

// The weights' uses of a pass in execution order: each layer's four Linears forward; in training, then the
// backward's, last layer first, each recomputed layer's forward uses before its backward's.
std::vector<WeightUse> Gpt::weight_schedule(bool training) const {
    std::vector<int> const linears = arch_.layer_linears();
    auto forward_uses = [&](int l) {
        std::vector<WeightUse> uses;
        for (int id : linears) {
            uses.push_back({gemm_weight(id, l * (layout_.local_numel(id) / arch_.layers)), linear_block(layout_, id)});
        }
        return uses;
    };
    std::vector<WeightUse> schedule;
    for (int l = 0; l < arch_.layers; ++l) {
        for (WeightUse const& u : forward_uses(l)) schedule.push_back(u);
    }
    if (!training) return schedule;
    for (int l = arch_.layers - 1; l >= 0; --l) {
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

void Gpt::norm_forward(float* out, float* mean, float* rstd, float const* inp, int weight, int bias,
                       std::int64_t offset, std::int64_t N) {
    parallel_norm_forward(backend_, grid_, norm_spec(), statistics_.data<double>(), out, mean, rstd, inp,
                          layer_values(weight, offset), layer_values(bias, offset), N);
}

void Gpt::norm_backward(float* dinp, float const* dout, float const* inp, float const* mean, float const* rstd,
                        int weight, int bias, std::int64_t offset, std::int64_t N) {
    parallel_norm_backward(backend_, grid_, norm_spec(), statistics_.data<double>(), dinp, layer_grad(weight, offset),
                           layer_grad(bias, offset), dout, inp, layer_values(weight, offset), mean, rstd, N);
}

float Gpt::run_forward(Batch const& batch, bool training, double loss_weight_total, KvCache* cache) {
    TraceSpan const span("forward", TraceTrack::steps);
    invariant(batch.B > 0 && batch.B <= max_batch_, "batch of {} sequences, the model was built for at most {}",
              batch.B, max_batch_);
    invariant(batch.T > 0 && batch.T <= max_seq_, "sequence of {} tokens, the model was built for at most {}",
              batch.T, max_seq_);
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    std::int64_t const chunks = logit_chunks(d.BT, options_.logit_rows);
    invariant(chunks == 1 || batch.targets != nullptr,
              "a forward without targets of {} rows needs all their logits: the model holds {} "
              "(GptOptions::logit_rows)", d.BT, logit_capacity());
    Backend& k = backend_;
    double* stats = statistics_.data<double>();
    VocabSlice const vocab = vocab_slice();

    // Weights change between steps: a step's first pass gathers them anew.
    if (!training || pass_.first) step_->weights.invalidate();
    refresh_gemm_weights();
    // The vocabulary blocks [Vp/G_y, C/G_x] (the embedding, and an untied LM head), gathered over Z once for the
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
    // The positions' embeddings (GPT-2's), added once over Y: those after the cached tokens' when continuing them.
    std::int64_t const first_position = cache != nullptr ? cache->length() : 0;
    float const* wpe = arch_.params.positions >= 0 && grid_.coord(Axis::y) == 0
                           ? param_values(arch_.params.positions) + first_position * d.Cx
                           : nullptr;
    Batch const kernel_batch = batch_for_kernels(batch);
    vocab_parallel_embedding_forward(k, grid_, vocab, activation(a.encoded), kernel_batch.tokens, gathered_vocab_block(0),
                                     wpe, d.B, d.T, d.Cx);

    bool const recompute = options_.recompute == Recompute::layer;
    for (int l = 0; l < d.L; ++l) {
        TraceSpan const layer(TraceTrack::steps, [&] { return fmt::format("layer {}", l); });
        forward_layer(l, recompute ? 0 : l, batch, cache);
    }

    float const* residual = activation(a.outputs + (d.L - 1) * a.BTCx);
    norm_forward(activation(a.lnf), activation(a.lnf_mean), activation(a.lnf_rstd), residual, arch_.params.lnfw,
                 arch_.params.lnfb, 0, d.BT);
    last_batch_ = kernel_batch;
    backward_ready_ = training;
    logits_held_ = chunks == 1;
    head_backward_in_forward_ = chunks > 1 && training;
    // The LM head: logits[rows, Vp/Gy] = AllReduce_X(lnf[rows] · head_blkᵀ), the head's block (GPT-2's is the
    // token embedding's) already gathered, so the GEMM runs on it directly; then each row's cross-entropy over
    // the vocabulary split over Y. In chunks of rows, a training pass runs each chunk's backward at once, so that
    // every token's share of the loss is needed first.
    double const total = head_backward_in_forward_ ? weigh_tokens_first(batch, loss_weight_total) : loss_weight_total;
    WeightView const head = gathered_vocab_block(vocab_blocks(arch_) - 1);
    for (std::int64_t c = 0; c < chunks; ++c) {
        std::int64_t const first = d.BT * c / chunks, rows = d.BT * (c + 1) / chunks - first;
        parallel_linear_forward(k, linear_groups(false), options_.overlap, activation(a.logits),
                                activation(a.lnf) + first * d.Cx, head, nullptr, rows, d.Cx, d.Vpy);
        if (batch.targets == nullptr) return std::numeric_limits<float>::quiet_NaN();
        vocab_parallel_cross_entropy_forward(k, grid_, vocab, activation(a.losses) + first, activation(a.logsumexp) + first,
                                             activation(a.row_max) + first, stats, activation(a.logits),
                                             kernel_batch.targets + first, rows);
        if (head_backward_in_forward_) {
            head_backward(kernel_batch, first, rows, c == 0 ? head_block_write() : GradWrite::accumulate);
        }
    }
    return pass_loss(batch, total);
}

float Gpt::pass_loss(Batch const& batch, double loss_weight_total) {
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

float Gpt::weigh_losses(Batch const& batch, float const* losses, float* dlosses, double loss_weight_total) {
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

double Gpt::weigh_tokens_first(Batch const& batch, double loss_weight_total) {
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

void Gpt::forward_layer(int l, int slot, Batch const& batch, KvCache* cache) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    DecoderParams const& p = arch_.params;
    LinearGroups const normal = linear_groups(false), transposed = linear_groups(true);
    LayerActivations const act(activations_.data<float>(), a, l, slot);
    std::int64_t const lCx = static_cast<std::int64_t>(l) * d.Cx, lWy = static_cast<std::int64_t>(l) * d.Wy,
                       lUy = static_cast<std::int64_t>(l) * d.Uy;
    bool const overlap = options_.overlap;

    norm_forward(act.ln1, act.ln1_mean, act.ln1_rstd, act.input, p.ln1w, p.ln1b, lCx, d.BT);
    parallel_linear_forward(k, normal, overlap, act.qkv, act.ln1, step_->weights.next(), layer_values(p.qkvb, lWy), d.BT,
                            d.Cx, d.Wy);
    int const past = cache != nullptr ? cache->length() : 0;
    if (!arch_.rope_inv_freq.empty()) {  // rotary positions: this rank's query heads, then its key heads
        k.rope_rotate(act.qkv, arch_.rope_inv_freq.data(), d.B, d.T, d.NHy, d.hs, d.Wy, past, +1);
        k.rope_rotate(act.qkv + d.Cy, arch_.rope_inv_freq.data(), d.B, d.T, d.NKVy, d.hs, d.Wy, past, +1);
    }
    if (cache != nullptr) {
        k.attention_cached(act.atty, act.att_lse, cache->keys(l), cache->values(l), act.qkv, d.B, d.T, past,
                           cache->capacity(), d.Cy, d.NHy, d.NKVy);
    } else {
        k.attention_forward(act.atty, act.att_lse, act.qkv, d.B, d.T, d.Cy, d.NHy, d.NKVy);
    }
    // The projections write into the sums they feed, which the residuals then complete in place: the backward
    // never reads a projection's output, so no buffer keeps it.
    parallel_linear_forward(k, transposed, overlap, act.residual2, act.atty, step_->weights.next(),
                            layer_values(p.attprojb, lCx), d.BT, d.Cy, d.Cx);
    k.residual_forward(act.residual2, act.input, act.residual2, d.BT * d.Cx);
    norm_forward(act.ln2, act.ln2_mean, act.ln2_rstd, act.residual2, p.ln2w, p.ln2b, lCx, d.BT);
    parallel_linear_forward(k, normal, overlap, act.fch, act.ln2, step_->weights.next(), layer_values(p.fcb, lUy), d.BT,
                            d.Cx, d.Uy);
    if (arch_.gelu) {
        k.gelu_forward(act.fch_gelu, act.fch, d.BT * d.Fy);
    } else {
        k.swiglu_forward(act.fch_gelu, act.fch, d.BT, d.Fy);
    }
    parallel_linear_forward(k, transposed, overlap, act.output, act.fch_gelu, step_->weights.next(),
                            layer_values(p.fcprojb, lCx), d.BT, d.Fy, d.Cx);
    k.residual_forward(act.output, act.residual2, act.output, d.BT * d.Cx);
}

float* Gpt::vocab_block_grad(int which) { return vocab_->gradient(which, grad(vocab_param(which))); }

void Gpt::start_vocab_gradient(int which, GradWrite write) {
    int const id = vocab_param(which);
    vocab_->start_gradient(which, grad(id), layout_.local_numel(id), write);
}

GradWrite Gpt::head_block_write() const {
    // Each vocabulary block's gradient [Vp/Gy, C/Gx] (GPT-2's one for the LM head and the lookup) waits in its
    // block to be reduce-scattered over Z at the end; without a Z split it is the shard itself.
    return grid_.shape().z > 1 || pass_.first ? GradWrite::overwrite : GradWrite::accumulate;
}

void Gpt::head_backward(Batch const& batch, std::int64_t first, std::int64_t rows, GradWrite write) {
    TraceSpan const span("LM head backward", TraceTrack::steps);
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    VocabSlice const vocab = vocab_slice();
    float* d_ln = activation_grads_.data<float>() + a.d_ln + first * d.Cx;  // [rows, C/Gx] the lnf gradient's rows
    float const* lnf = activation(a.lnf) + first * d.Cx;                     // [rows, C/Gx]
    int const head_block = vocab_blocks(arch_) - 1;
    // The logits buffer becomes dlogits in place: the logits are not needed again. The LM head's input gradient
    // is all-reduced over Y while its weight gradient is computed (OAR); its weight gradient waits in its block
    // (for the lookup's, when tied), and is reduce-scattered at the end.
    float* dlogits = activation(a.logits);  // [rows, Vp/Gy]
    k.cross_entropy_backward(dlogits, dlogits, activation(a.logsumexp) + first, batch.targets + first,
                             activation(a.dlosses) + first, rows, vocab.valid, vocab.rows, vocab.begin);
    parallel_input_gradient(k, linear_groups(false), options_.overlap, d_ln, dlogits, gathered_vocab_block(head_block),
                            rows, d.Cx, d.Vpy, [&](GemmInput gemm_dlogits) {
        k.linear_backward_weight(vocab_block_grad(head_block), nullptr, gemm_dlogits, lnf, rows, d.Cx, d.Vpy, write);
    });
}

void Gpt::backward() {
    TraceSpan const span("backward", TraceTrack::steps);
    invariant(backward_ready_, "backward() needs a train_forward() first");
    backward_ready_ = false;
    GradWrite const write = pass_.first ? GradWrite::overwrite : GradWrite::accumulate;
    if (write == GradWrite::overwrite) {
        for (int id = 0; id < layout_.count(); ++id) {
            if (!gemm_written(arch_, id)) backend_.zero(grad(id), layout_.local_numel(id) * sizeof(float));
        }
    }
    if (pass_.last) step_->sync.begin(gradients_.data<float>());
    Batch const& batch = last_batch_;
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    DecoderParams const& p = arch_.params;
    VocabSlice const vocab = vocab_slice();
    float* scratch = activation_grads_.data<float>();
    float* d_residual_out = scratch + a.d_residual_out;  // [B,T,C/Gx] gradient of the current layer's output
    float* d_ln = scratch + a.d_ln;                      // [B,T,C/Gx] lnf

    // An untied embedding's block only gathers the lookup's sums: it starts from zero.
    bool const z_split = grid_.shape().z > 1;
    if (!arch_.tied_head && z_split) {
        k.zero(vocab_block_grad(0), vocab_block(d) * static_cast<std::int64_t>(sizeof(float)));
    }
    if (!head_backward_in_forward_) head_backward(batch, 0, d.BT, head_block_write());
    // An untied LM head's gradient is complete: its Z reduce-scatter runs under the layers' backward. A tied
    // one's waits for the lookup's gradient, the backward's last computation.
    if (!arch_.tied_head) start_vocab_gradient(1, write);
    k.zero(d_residual_out, d.BT * d.Cx * static_cast<std::int64_t>(sizeof(float)));
    norm_backward(d_residual_out, d_ln, activation(a.outputs + (d.L - 1) * a.BTCx), activation(a.lnf_mean),
                  activation(a.lnf_rstd), p.lnfw, p.lnfb, 0, d.BT);
    if (pass_.last) {
        std::vector<GradSlice> final_norm = {{p.lnfw}};
        if (p.lnfb >= 0) final_norm.push_back({p.lnfb});
        step_->sync.final(final_norm);
    }

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
    // The lookup's gradient: the rows of this rank's vocabulary slice; GPT-2's wpe's on every Y rank (replicated).
    float* dwpe = p.positions >= 0 ? grad(p.positions) : nullptr;
    k.encoder_backward(vocab_block_grad(0), dwpe, d_residual_out, batch.tokens, d.B, d.T, d.Cx, vocab.begin,
                       vocab.rows);
    // The last gradients to finish; what remains (their data sums, the norm) needs them, so they are waited on at
    // once. The untied head's runs under the layers' backward.
    if (!arch_.tied_head) vocab_->finish_gradient(1);
    start_vocab_gradient(0, write);
    vocab_->finish_gradient(0);
    if (pass_.last) {
        std::vector<GradSlice> edges = {{p.embed}};
        if (p.positions >= 0) edges.push_back({p.positions});
        if (!arch_.tied_head) edges.push_back({p.head});
        step_->sync.final(edges);
        step_->sync.finish();
        replicated_rows_->sum(gradients_.data<float>());
    } else {
        step_->weight_grads.complete_all();
    }
}

void Gpt::backward_layer(int l, int slot, Batch const& batch, GradWrite write) {
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    LocalDims const d(arch_, grid_.shape(), batch.B, batch.T);
    Backend& k = backend_;
    DecoderParams const& p = arch_.params;
    LinearGroups const normal = linear_groups(false), transposed = linear_groups(true);
    GradScatter& scatter = step_->weight_grads;
    bool const overlap = options_.overlap;
    float* scratch = activation_grads_.data<float>();
    float* d_residual_out = scratch + a.d_residual_out;  // [B,T,C/Gx] gradient of the layer's output, then input
    float* d_residual_in = scratch + a.d_residual_in;    // [B,T,C/Gx] gradient of residual2
    float* d_branch = scratch + a.d_branch;              // [B,T,C/Gx] a projection's output gradient
    float* d_ln = scratch + a.d_ln;                      // [B,T,C/Gx] ln1 / ln2
    float* d_fch_gelu = scratch + a.d_fch_gelu;          // [B,T,Fy]
    float* d_fch = scratch + a.d_fch;                    // [B,T,Uy]
    float* d_atty = scratch + a.d_atty;                  // [B,T,C/Gy]
    float* d_qkv = scratch + a.d_qkv;                    // [B,T,Wy]
    LayerActivations const act(activations_.data<float>(), a, l, slot);
    std::int64_t const lCx = static_cast<std::int64_t>(l) * d.Cx, lWy = static_cast<std::int64_t>(l) * d.Wy,
                       lUy = static_cast<std::int64_t>(l) * d.Uy;
    auto per_layer = [&](int id) { return l * (layout_.local_numel(id) / d.L); };
    auto zero = [&k](float* buffer, std::int64_t numel) {
        k.zero(buffer, numel * static_cast<std::int64_t>(sizeof(float)));
    };

    // output = residual2 + fcproj: both receive d_residual_out. d_residual_in collects residual2's gradient.
    zero(d_residual_in, d.BT * d.Cx);
    zero(d_branch, d.BT * d.Cx);
    k.residual_backward(d_residual_in, d_branch, d_residual_out, d.BT * d.Cx);
    parallel_linear_backward(k, transposed, scatter, overlap, d_fch_gelu, grad(p.fcprojw) + per_layer(p.fcprojw),
                             layer_grad(p.fcprojb, lCx), d_branch, act.fch_gelu, step_->weights.next(), d.BT, d.Fy, d.Cx,
                             write);
    zero(d_fch, d.BT * d.Uy);
    if (arch_.gelu) {
        k.gelu_backward(d_fch, act.fch, d_fch_gelu, d.BT * d.Fy);
    } else {
        k.swiglu_backward(d_fch, act.fch, d_fch_gelu, d.BT, d.Fy);
    }
    parallel_linear_backward(k, normal, scatter, overlap, d_ln, grad(p.fcw) + per_layer(p.fcw), layer_grad(p.fcb, lUy),
                             d_fch, act.ln2, step_->weights.next(), d.BT, d.Cx, d.Uy, write);
    norm_backward(d_residual_in, d_ln, act.residual2, act.ln2_mean, act.ln2_rstd, p.ln2w, p.ln2b, lCx, d.BT);

    // residual2 = residual + attproj: the same split, now from d_residual_in into d_residual_out.
    zero(d_residual_out, d.BT * d.Cx);
    zero(d_branch, d.BT * d.Cx);
    k.residual_backward(d_residual_out, d_branch, d_residual_in, d.BT * d.Cx);
    parallel_linear_backward(k, transposed, scatter, overlap, d_atty, grad(p.attprojw) + per_layer(p.attprojw),
                             layer_grad(p.attprojb, lCx), d_branch, act.atty, step_->weights.next(), d.BT, d.Cy, d.Cx,
                             write);
    zero(d_qkv, d.BT * d.Wy);
    k.attention_backward(d_qkv, d_atty, act.qkv, act.atty, act.att_lse, d.B, d.T, d.Cy, d.NHy, d.NKVy);
    if (!arch_.rope_inv_freq.empty()) {  // the rotation's gradient: the rotation back
        k.rope_rotate(d_qkv, arch_.rope_inv_freq.data(), d.B, d.T, d.NHy, d.hs, d.Wy, 0, -1);
        k.rope_rotate(d_qkv + d.Cy, arch_.rope_inv_freq.data(), d.B, d.T, d.NKVy, d.hs, d.Wy, 0, -1);
    }
    parallel_linear_backward(k, normal, scatter, overlap, d_ln, grad(p.qkvw) + per_layer(p.qkvw),
                             layer_grad(p.qkvb, lWy), d_qkv, act.ln1, step_->weights.next(), d.BT, d.Cx, d.Wy, write);
    norm_backward(d_residual_out, d_ln, act.input, act.ln1_mean, act.ln1_rstd, p.ln1w, p.ln1b, lCx, d.BT);
}

double Gpt::gradient_norm() { return axonn::gradient_norm(layout_, backend_, gradients_.data<float>(), grid_); }

Tensor Gpt::gather(int id, bool gradient) {
    return gather_serial_tensor(layout_, grid_, id, gradient ? grad(id) : param_values(id));
}

}  // namespace axonn
