#include "axonn/model/decoder.h"

#include "axonn/core/error.h"
#include "axonn/model/decoder_layout.h"
#include "axonn/parallel/parameter_init.h"
#include "axonn/parallel/serial_gather.h"

#include <algorithm>
#include <utility>

namespace axonn {

using namespace decoder_layout;

void require_grid_fits(Architecture const& architecture, DecoderOptions const& options, GridShape const& grid,
                       int world, std::optional<int> batch) {
    GridLayout const laid_out = [&](GridShape const& shape) {
        return architecture.with_vocab_split(options.vocab_split, shape, options.precision).declarations;
    };
    require_valid_grid(laid_out, grid, world, batch);
}

Decoder::Decoder(ModelConfig const& model, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
                 DecoderOptions const& options)
    : Decoder(model.validated_architecture(), backend, grid, local_batch, max_seq, options) {}

Decoder::Decoder(Architecture architecture, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
                 DecoderOptions const& options)
    : arch_(architecture.with_vocab_split(options.vocab_split, grid.shape(), options.precision)), backend_(backend),
      grid_(grid), max_batch_(local_batch), max_seq_(max_seq), options_(options), layout_(arch_.declarations, GridPosition::of(grid)) {
    AXONN_INVARIANT(backend.gemm_dtype() == options.precision, "a model in {} needs a backend made for it, not {}",
                    dtype_name(options.precision), dtype_name(backend.gemm_dtype()));
    AXONN_REQUIRE(local_batch > 0, "batch size must be positive, got {}", local_batch);
    AXONN_REQUIRE(max_seq > 0, "sequence length must be positive, got {}", max_seq);
    AXONN_REQUIRE(max_seq <= arch_.context, "sequence length {} is longer than the model's context {}: lower --seq",
                  max_seq, arch_.context);
    GridShape const& shape = grid.shape();
    require_valid_grid(arch_.declarations, shape, grid.world_size(), std::nullopt);  // each replica has its batch
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
    bf16_activations_ = Tensor({buffer_numel(sizes.bf16_total)}, DType::bf16, memory);
    statistics_ = Tensor({dims.BT, 2}, DType::f64, memory);
    vocab_ = std::make_unique<VocabBlocks>(grid, backend, vocab_blocks(arch_), vocab_block(dims), options_.precision,
                                           options_.grad_scatter_comm, options_.overlap);
    activation_staging_ =
        Tensor({buffer_numel(bf16_staging_numel(dims, shape, options_))}, options_.precision, memory);
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

Decoder::~Decoder() = default;

std::vector<ParamSegment> Decoder::segments() const { return param_segments(layout_); }

VocabSlice Decoder::vocab_slice() const {
    return axonn::vocab_slice(grid_, arch_.vocab_split, arch_.padded_vocab, arch_.vocab_size, arch_.width);
}

void Decoder::init_weights(std::uint64_t seed) {
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

void Decoder::copy_parameters_to_host(std::span<float> out) const {
    AXONN_INVARIANT(static_cast<std::int64_t>(out.size()) == layout_.total(), "{} values for {} parameters", out.size(),
                    layout_.total());
    backend_.copy_to_host(out.data(), parameters_.data<float>(), static_cast<std::int64_t>(parameters_.bytes()));
}

void Decoder::copy_parameters_from_host(std::span<float const> in) {
    AXONN_INVARIANT(static_cast<std::int64_t>(in.size()) == layout_.total(), "{} values for {} parameters", in.size(),
                    layout_.total());
    backend_.copy_from_host(parameters_.data<float>(), in.data(), static_cast<std::int64_t>(parameters_.bytes()));
    gemm_weights_stale_ = true;
}

std::int64_t logit_chunks(std::int64_t rows, int logit_rows) {
    return logit_rows > 0 ? std::max<std::int64_t>(1, (rows + logit_rows - 1) / logit_rows) : 1;
}

std::int64_t Decoder::logit_capacity() const {
    return logit_rows_held(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
}

float const* Decoder::logits() const {
    AXONN_INVARIANT(logits_held_, "the last forward computed its logits in chunks of {} rows and holds none",
                    options_.logit_rows);
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    return activations_.data<float>() + a.logits;
}

float const* Decoder::token_losses() const {
    if (!in_host_memory()) return host_losses_.data();
    ActivationLayout const a(LocalDims(arch_, grid_.shape(), max_batch_, max_seq_), options_);
    return activations_.data<float>() + a.losses;
}

Batch Decoder::batch_for_kernels(Batch const& batch) {
    if (in_host_memory()) return batch;
    std::int64_t const bytes =
        static_cast<std::int64_t>(batch.B) * batch.T * static_cast<std::int64_t>(sizeof(std::int32_t));
    std::int32_t* tokens = batch_ids_.data<std::int32_t>();
    std::int32_t* targets = tokens + batch_ids_.shape()[1];
    backend_.copy_from_host(tokens, batch.tokens, bytes);
    if (batch.targets != nullptr) backend_.copy_from_host(targets, batch.targets, bytes);
    return {batch.B, batch.T, tokens, batch.targets != nullptr ? targets : nullptr, batch.loss_mask};
}

LinearGroups Decoder::linear_groups(bool transposed) {
    bfloat16* staging = options_.precision == DType::bf16 ? activation_staging_.data<bfloat16>() : nullptr;
    return axonn::linear_groups(grid_, transposed, staging);
}

void const* Decoder::gemm_weight(int id, std::int64_t element) const {
    Tensor const& weights = options_.precision == DType::f32 ? parameters_ : gemm_weights_;
    std::int64_t const bytes = (layout_.offset(id) + element) * static_cast<std::int64_t>(dtype_size(weights.dtype()));
    return static_cast<char const*>(weights.raw_data()) + bytes;
}

float const* Decoder::layer_values(int id, std::int64_t layer_offset) const {
    return id < 0 ? nullptr : param_values(id) + layer_offset;
}

float* Decoder::layer_grad(int id, std::int64_t layer_offset) { return id < 0 ? nullptr : grad(id) + layer_offset; }

Decoder::UpdateTarget Decoder::update_target() {
    // Views of the backend's buffers, which only its operations read (on a GPU the host cannot).
    auto const numel = static_cast<std::size_t>(layout_.total());
    std::span<float> const params(parameters_.data<float>(), numel);
    std::span<float const> const grads(gradients_.data<float>(), numel);
    if (options_.precision != DType::bf16) return {params, grads, nullptr};
    // The copy is current now (every forward refreshes it), and the update writes both alike.
    refresh_gemm_weights();
    return {params, grads, gemm_weights_.data<bfloat16>()};
}

void Decoder::refresh_gemm_weights() {
    if (options_.precision == DType::f32 || !gemm_weights_stale_) return;
    backend_.convert(gemm_weights_.raw_data(), options_.precision, parameters_.raw_data(), DType::f32, layout_.total());
    gemm_weights_stale_ = false;
}

WeightView Decoder::gathered_vocab_block(int which) const {
    return vocab_->block(which, gemm_weight(vocab_param(which)));
}

// The weights' uses of a pass in execution order: each layer's four Linears forward; in training, then the
// backward's, last layer first, each recomputed layer's forward uses before its backward's.
std::vector<WeightUse> Decoder::weight_schedule(bool training) const {
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

double Decoder::gradient_norm() { return axonn::gradient_norm(layout_, backend_, gradients_.data<float>(), grid_); }

std::vector<Tensor> Decoder::gather_serial(bool gradient) {
    return gather_serial_tensors(layout_, grid_, gradient ? gradients_.data<float>() : parameters_.data<float>());
}

}  // namespace axonn
