// The decoder every model family runs (GPT-2, Llama: architecture.h), with an explicit forward and backward over
// preallocated buffers: no autograd tape. One implementation serves every process grid: each rank holds its shards
// of the weights (parallel/shard_layout.h) and its rows of the batch, and the layers are the parallel layers of
// parallel/ (linear.h, norm.h, vocab_parallel.h), which alone talk over the grid's groups: no collective is issued
// here. On the grid 1×1×1×1 every group has one member, no collective runs, and this is the serial model.
// The forward walks the layers computing named activations; the backward walks the same list in reverse, each
// layer's backward the mirror image of its forward (decoder_forward.cpp, decoder_backward.cpp).
//
// Communication overlaps computation (DecoderOptions::overlap): the Z all-gathers of the weights are issued one
// Linear ahead (weight_gather.h), each Linear's input-gradient all-reduce runs under its weight-gradient GEMM and
// its weight-gradient reduce-scatter under the rest of the backward (linear.h, grad_scatter.h), an untied LM
// head's reduce-scatter under the layers' backward (vocab_parallel.h), and the gradient sync over Z and data
// starts layer by layer during the last backward of a step (gradient_sync.h). Off, the same collectives are waited
// on as they are issued: the results are bitwise the same. A step may run in several passes (micro-batches) whose
// gradients accumulate, and may keep only each layer's input and recompute the rest in the backward
// (DecoderOptions::recompute): bitwise the same results again, for less memory.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/kernels/backend.h"
#include "axonn/model/architecture.h"
#include "axonn/model/decoder_memory.h"
#include "axonn/model/decoder_options.h"
#include "axonn/model/kv_cache.h"
#include "axonn/model/model_config.h"
#include "axonn/parallel/linear.h"
#include "axonn/parallel/norm.h"
#include "axonn/parallel/replicated_rows.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/parallel/step_collectives.h"
#include "axonn/parallel/vocab_parallel.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace axonn {

namespace decoder_layout {
struct LocalDims;
struct KeptActivation;
}

class Decoder {
public:
    // A model of any family, as its Architecture says. local_batch: sequences per pass on this process (the global
    // batch / (G_data · G_z · micro-batches)).
    Decoder(Architecture architecture, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
            DecoderOptions const& options = {});
    // The same for a model as a run names it (a GPT-2 shape or a Llama config), validated first.
    Decoder(ModelConfig const& model, Backend& backend, ProcessGrid& grid, int local_batch, int max_seq,
            DecoderOptions const& options = {});
    ~Decoder();

    Architecture const& architecture() const { return arch_; }
    ShardLayout const& layout() const { return layout_; }
    ProcessGrid& grid() { return grid_; }
    Backend& backend() { return backend_; }
    // Whether the model's buffers are in host memory (a CPU backend) rather than a device's.
    bool in_host_memory() const { return backend_.memory() == Memory::host; }
    int max_batch() const { return max_batch_; }
    int max_seq() const { return max_seq_; }
    DecoderOptions const& options() const { return options_; }
    DecoderMemory memory() const { return decoder_memory(arch_, grid_.shape(), max_batch_, max_seq_, options_); }
    std::vector<ParamSegment> segments() const;

    // The declared initialisation from the counter-based RNG: element e of tensor p is a function of (seed, p, e)
    // only, e being the element's index in the serial tensor, so every grid starts from the serial model's weights.
    void init_weights(std::uint64_t seed);

    // The fp32 master weights, writable: taking them marks the GEMMs' bf16 copy out of date (mixed precision),
    // and the next forward refreshes it.
    std::span<float> params() {
        gemm_weights_stale_ = true;
        return parameters_.span<float>();
    }
    float* param(ParamIndex auto id) {
        gemm_weights_stale_ = true;
        return parameters_.data<float>() + layout_.offset(id);
    }
    float const* param_values(ParamIndex auto id) const { return parameters_.data<float>() + layout_.offset(id); }
    std::span<float const> param_values() const { return parameters_.span<float>(); }
    // For the optimizer, in the backend's memory: the master weights, their gradients, and their GEMM copy (bf16;
    // null in fp32), which the update rewrites in the same pass (AdamW::step), so the next forward need not
    // convert them again.
    struct UpdateTarget {
        std::span<float> params;
        std::span<float const> grads;
        bfloat16* gemm_copy;
    };
    UpdateTarget update_target();
    std::span<float> grads() { return gradients_.span<float>(); }
    // The master weights to and from host memory, whatever the backend's (for checkpoints and imports):
    // out/in[layout().total()].
    void copy_parameters_to_host(std::span<float> out) const;
    void copy_parameters_from_host(std::span<float const> in);
    float* grad(ParamIndex auto id) { return gradients_.data<float>() + layout_.offset(id); }

    // Runs the model on this process's rows (no backward follows) and returns the mean loss over every token of
    // the global batch that counts (the same on all ranks; NaN without targets). One of several passes over a
    // batch returns its share instead: its tokens' loss divided by the given total loss weight of all of them.
    float forward(Batch const& batch, double loss_weight_total = 0);
    // Runs the model on batch.T new tokens of each of its rows (no targets), continuing the tokens `cache` holds:
    // their positions start at cache.length(), each attends to every cached token and to the new ones before it,
    // and their keys and values join the cache. The logits of the new tokens are left as forward() leaves them.
    // batch.B = cache.batch(); cache.length() + batch.T ≤ cache.capacity().
    void forward_cached(Batch const& batch, KvCache& cache);
    // The loss weight of a step's tokens (a target of -1 counts 0, else its mask value or 1), summed over these
    // passes on every rank: Pass::loss_weight_total for a step of several passes (a collective).
    double global_loss_weight(std::span<Batch const> passes);
    // The forward of a training pass (the batch needs targets): returns this pass's share of the step's mean loss
    // (the mean itself when the pass is the step's only one). backward() follows.
    float train_forward(Batch const& batch, Pass const& pass = {});
    // The gradient of the last train_forward's loss into grads(): replacing what they hold in the step's first
    // pass (no zero_grad() needed: the weight-matrix GEMMs write their gradients directly and only the small
    // tensors are zeroed), added to it in the others. The step's last pass completes the gradients across the
    // grid: summed over Z for the tensors replicated there, then over data.
    void backward();
    // Global L2 norm of the (synchronised) gradients, each element of the serial model counted once.
    double gradient_norm();

    // [B, T, vocab_slice().rows] logits of the last forward (this rank's vocabulary slice); backward overwrites
    // them. In the backend's memory. Only while holds_logits(): a forward in chunks (DecoderOptions::logit_rows)
    // keeps none.
    float const* logits() const;
    bool holds_logits() const { return logits_held_; }
    // The most token rows whose logits the model holds at once: a forward of more rows goes in chunks.
    std::int64_t logit_capacity() const;
    // [B, T] each token's cross-entropy in the last forward with targets (0 where the target is ignored), whatever
    // its loss weight: the same on every rank that holds the row. In host memory, whatever the backend.
    float const* token_losses() const;
    VocabSlice vocab_slice() const;

    // Every parameter's (or gradient's) whole serial tensor, indexed by id, on every rank: one collective over the
    // world for them all (parallel/serial_gather.h).
    std::vector<Tensor> gather_serial(bool gradient);

private:
    float* activation(std::int64_t offset) { return activations_.data<float>() + offset; }
    // The batch as the kernels read it: itself on a host backend; else its token ids and targets copied into the
    // backend's memory (the loss mask, read only by the host, stays where it is).
    Batch batch_for_kernels(Batch const& batch);
    // Each token's loss weight into dlosses and the weighted sums of the loss, on the host: returns the pass's loss.
    float weigh_losses(Batch const& batch, float const* losses, float* dlosses, double loss_weight_total);
    // The pass's loss from its tokens' losses, wherever the backend holds them (weigh_losses on the host), and
    // each token's share of it into dlosses, in the backend's memory.
    float pass_loss(Batch const& batch, double loss_weight_total);
    // Each token's share of the loss into dlosses before any loss is known: its weight over the total given, or,
    // for a pass that is its step's only one and was given none, over the total weight of its tokens on every
    // rank (a collective). Returns that total.
    double weigh_tokens_first(Batch const& batch, double loss_weight_total);
    // The gradient of the whole pass's logits (the logits buffer), after the forward: in place in fp32, or its bf16
    // rounding alone (Backend::cross_entropy_backward).
    GemmInput logits_gradient(Batch const& batch);
    // The LM head's backward for rows [first, first + rows) of the pass from their logits' gradient dlogits: the
    // final_norm gradient's rows, and the head's weight gradient written or added.
    void head_backward(Batch const& batch, GemmInput dlogits, std::int64_t first, std::int64_t rows,
                       GradWrite write);
    // Where a vocabulary block's gradient gathers (its block when Z is split, else its shard), and how the LM
    // head's first GEMM writes there this pass.
    float* vocab_block_grad(int which);
    GradWrite head_block_write() const;
    // With a cache: a forward_cached().
    float run_forward(Batch const& batch, bool training, double loss_weight_total, KvCache* cache = nullptr);
    // A pass's weights made ready: the bf16 copy refreshed, the vocabulary blocks gathered over Z, the Linears'
    // gathers scheduled (and the first one started).
    void begin_pass_weights(bool training);
    // The embedding of the batch's tokens (in the kernels' memory) at positions from first_position on.
    void embed(Batch const& kernel_batch, int first_position);
    // Where the embedding's forward and backward stage a pass's whole hidden states with the vocabulary over X·Y.
    VocabScratch vocab_scratch();
    // The LM head and its loss over the final norm's rows, in chunks; returns the pass's loss (NaN without targets).
    float head_forward(Batch const& batch, Batch const& kernel_batch, double loss_weight_total);
    std::vector<WeightUse> weight_schedule(bool training) const;
    // The backward's ends: the LM head's and the final norm's (the head's reduce-scatter started when untied), and
    // the embedding's, which completes the vocabulary gradients and, in a step's last pass, the gradient sync.
    void head_and_final_norm_backward(GradWrite write);
    void embedding_backward(GradWrite write);
    void forward_layer(int l, int slot, Batch const& batch, KvCache* cache = nullptr);
    void backward_layer(int l, int slot, Batch const& batch, GradWrite write);
    // Rotary positions on qkv[B,T,Wy]'s query and key heads, token t at first_position + t; direction -1 rotates
    // a gradient back. Nothing for a family with learned positions.
    void rotate_positions(float* qkv, decoder_layout::LocalDims const& d, int first_position, int direction);
    // A kept activation's n values rounded into its slot (the forward), or widened back from it (the backward,
    // which returns where); nothing where the values themselves are kept (decoder_layout.h).
    void keep_rounded(decoder_layout::KeptActivation const& activation, std::int64_t n);
    float* widened(decoder_layout::KeptActivation const& activation, std::int64_t n);
    // The MLP's activation: out[B·T,Fy] = gelu(inp + bias) or silu(gate)·up of inp[B·T,Uy], GELU adding its
    // Linear's bias[Fy] (null: none; SwiGLU's Linear adds its own) and keeping inp (in place, or its rounding alone,
    // written by the same pass); and its backward from inp as kept, returning dinp[B·T,Uy] as its Linear's GEMMs
    // read it (Backend::gemm_input: in mixed precision GELU's is written as its bf16 rounding alone, SwiGLU's into
    // dinp, then rounded) and, for GELU, summing dbias[Fy] (null: none); both read a kept rounding of inp directly.
    void mlp_activation_forward(OperandOut out, decoder_layout::KeptActivation const& inp, float const* bias,
                                decoder_layout::LocalDims const& d);
    GemmInput mlp_activation_backward(float* dinp, float* dbias, decoder_layout::KeptActivation const& inp,
                                      float const* dout, decoder_layout::LocalDims const& d);
    // LayerNorm or RMSNorm over X, as the family has it: out[B·T,C/Gx] with its mean (LayerNorm) and rstd[B·T].
    void norm_forward(OperandOut out, float* mean, float* rstd, float const* inp, int weight, int bias,
                      std::int64_t offset, std::int64_t N);
    // A residual add, then the norm of its sum (parallel_residual_norm_forward), as norm_forward.
    void residual_norm_forward(ResidualAdd const& residual, OperandOut out, float* mean, float* rstd, int weight,
                               int bias, std::int64_t offset, std::int64_t N);
    void norm_backward(float* dinp, float const* dout, float const* inp, float const* mean, float const* rstd,
                       int weight, int bias, std::int64_t offset, std::int64_t N);
    // The vocabulary block [Vr, Vh] of the embedding (0) or of an untied LM head (1), gathered over Z.
    WeightView gathered_vocab_block(int which) const;
    int vocab_param(int which) const { return which == 0 ? arch_.params.embed : arch_.params.head; }
    // Starts a vocabulary block's gradient on its way into its parameter's shard (reduce-scattered over Z when Z
    // is split); vocab_->finish_gradient completes it.
    void start_vocab_gradient(int which, GradWrite write);
    NormSpec norm_spec() const { return {arch_.layernorm, arch_.width, arch_.norm_eps}; }
    // X and Y as a normal Linear's (F, O) groups, or a transposed one's, with the bf16 staging buffer.
    LinearGroups linear_groups(bool transposed);
    // Where the GEMMs read parameter `id`, `element` elements in: the master weights, or their bf16 copy.
    void const* gemm_weight(int id, std::int64_t element = 0) const;
    // A parameter's values at layer l, or null where the family has no such tensor (a bias of Llama's).
    float const* layer_values(int id, std::int64_t layer_offset) const;
    float* layer_grad(int id, std::int64_t layer_offset);
    void refresh_gemm_weights();

    Architecture arch_;
    Backend& backend_;
    ProcessGrid& grid_;
    int max_batch_;
    int max_seq_;
    DecoderOptions options_;
    ShardLayout layout_;
    Tensor parameters_;
    Tensor gemm_weights_;  // bf16 copy of parameters_ in mixed precision; empty in fp32
    bool gemm_weights_stale_ = true;
    Tensor gradients_;
    Tensor activations_;
    Tensor activation_grads_;
    Tensor bf16_activations_;  // the activations only GEMMs read, in mixed precision (ActivationLayout)
    Tensor statistics_;          // [B·T, 2] doubles: LayerNorm and cross-entropy sums between their all-reduces
    Tensor activation_staging_;  // the Linears' all-reduces in bf16, in mixed precision
    // A device backend's: the batch's token ids and targets [2, B·T] in its memory, and the host's copies of the
    // losses and their weights.
    Tensor batch_ids_;
    std::vector<float> host_losses_;
    std::vector<float> host_dlosses_;
    // The embedding's block (0) and an untied LM head's (1), gathered over Z, and their gradients' reduce-scatters.
    std::unique_ptr<VocabBlocks> vocab_;
    std::unique_ptr<ReplicatedRowSum> replicated_rows_;  // key/value rows replicated over Y
    std::unique_ptr<StepCollectives> step_;              // the Linears' Z gathers and scatters, the gradient sync
    Batch last_batch_;
    Pass pass_;
    bool backward_ready_ = false;
    bool logits_held_ = true;                // the last forward computed every row's logits at once
    bool head_backward_in_forward_ = false;  // the last training forward ran the LM head's backward chunk by chunk
};

// Refuses, naming the grids that fit, a grid this model does not split on when laid out as `options` lay it out
// (the vocabulary's split resolved for the grid, as a Decoder does), for a global batch of `batch` sequences (no
// batch: any) on `world` ranks: the check a job makes before its work starts.
void require_grid_fits(Architecture const& architecture, DecoderOptions const& options, GridShape const& grid,
                       int world, std::optional<int> batch);

}  // namespace axonn
