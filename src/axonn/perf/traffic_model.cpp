#include "axonn/perf/traffic_model.h"

#include "axonn/model/decoder_layout.h"
#include "axonn/parallel/linear.h"

namespace axonn {
namespace {

using Overlap = PredictedCollective::Overlap;
using Phase = PredictedCollective::Phase;

class TrafficBuilder {
public:
    explicit TrafficBuilder(GridShape const& grid) : grid_(grid) {}

    // `calls` collectives of `bytes_each` on `group`; nothing when the group has one member.
    void add(char const* op, Group group, std::uint64_t calls, std::uint64_t bytes_each, Overlap overlap,
             Phase phase) {
        add_total(op, group, calls, calls * bytes_each, overlap, phase);
    }
    // `calls` collectives of `bytes` in all.
    void add_total(char const* op, Group group, std::uint64_t calls, std::uint64_t bytes, Overlap overlap,
                   Phase phase) {
        if (grid_.size(group) == 1 || calls == 0) return;
        traffic_.push_back({op, group, calls, bytes, overlap, phase});
    }
    std::vector<PredictedCollective> take() { return std::move(traffic_); }

private:
    GridShape grid_;
    std::vector<PredictedCollective> traffic_;
};

}  // namespace

std::vector<PredictedCollective> predict_step_traffic(StepShape const& step) {
    GridShape const& g = step.grid;
    Architecture const model = step.decoder();
    std::uint64_t const L = model.layers, C = model.width;
    decoder_layout::LocalDims const dims(model, g, step.local_batch(), step.seq);
    // The vocabulary's block [Vr, Vh] (vocab_parallel.h); over the X·Y plane, X moves hidden states, not logits.
    std::uint64_t const Cx = C / g.x, Vr = dims.Vr, Vh = dims.Vh;
    bool const vocab_over_x = dims.vocab_over_x();
    // The vocabulary blocks gathered and reduce-scattered over Z: the embedding, and an untied LM head.
    std::uint64_t const vocab_blocks = model.tied_head ? 1 : 2;
    std::uint64_t const M = static_cast<std::uint64_t>(step.local_batch()) * step.seq;  // rows per pass
    std::uint64_t const passes = step.micro_batches();
    // The Linears' outputs and input gradients are all-reduced and weights gathered in the GEMMs' precision;
    // the embedding, statistics and gradients move in fp32.
    std::uint64_t const a = dtype_size(step.run.precision), f32 = 4, f64 = 8;
    std::uint64_t const scatter_elem = dtype_size(step.run.grad_scatter_comm);  // the gradients' Z reduce-scatters
    std::uint64_t const sum_elem = dtype_size(step.run.grad_sum_comm);          // their sums over data (and Y replicas)
    std::uint64_t const stats = 2 * M * f64;  // cross-entropy: two doubles per token
    std::uint64_t const norm_stats = (model.layernorm ? 2 : 1) * M * f64;  // LayerNorm two per token, RMSNorm one
    bool const recompute = step.run.recompute == Recompute::layer;
    std::uint64_t const forwards = recompute ? 2 : 1;  // each layer's forward, and its recomputation
    // A Linear's weight is gathered for each use: forward, recomputed forward, backward; cached, once per step
    // (in the first forward).
    std::uint64_t const forward_gathers = step.run.cache_weights ? 1 : passes;
    std::uint64_t const backward_gathers = step.run.cache_weights ? 0 : passes * forwards;
    TrafficBuilder t(g);
    ShardLayout const layout(model.declarations, GridPosition{g});
    auto const ar = "all_reduce";
    std::uint64_t const chunks = static_cast<std::uint64_t>(linear_row_chunks(static_cast<std::int64_t>(M)));
    // A Linear's output (forward) or input gradient (backward), all-reduced in chunks of rows (parallel/linear.h).
    auto chunked = [&](Group group, std::uint64_t linears, std::uint64_t width, Overlap overlap, Phase phase) {
        t.add_total(ar, group, linears * chunks, linears * M * width * a, overlap, phase);
    };
    // The LM head runs on chunks of the rows (DecoderOptions::logit_rows), each a Linear of its own rows.
    auto const logit_chunks_n =
        static_cast<std::uint64_t>(logit_chunks(static_cast<std::int64_t>(M), step.run.logit_rows));
    std::uint64_t head_row_chunks = 0;  // the row chunks of all of them
    for (std::uint64_t c = 0; c < logit_chunks_n; ++c) {
        std::uint64_t const rows = M * (c + 1) / logit_chunks_n - M * c / logit_chunks_n;
        head_row_chunks += static_cast<std::uint64_t>(linear_row_chunks(static_cast<std::int64_t>(rows)));
    }
    auto head_chunked = [&](Group group, std::uint64_t width, Overlap overlap, Phase phase) {
        t.add_total(ar, group, passes * head_row_chunks, passes * M * width * a, overlap, phase);
    };

    // Forward (and recomputed forward), per pass.
    auto const in_forward = Phase::forward, in_backward = Phase::backward;
    // The vocabulary blocks, needed at once.
    t.add("all_gather", Group::z_prefetch, passes * vocab_blocks, Vr * Vh * a, Overlap::none, in_forward);
    // The embedding: the residual stream starts in fp32. Over the X·Y plane the lookup's X column blocks are
    // reduce-scattered first, and the LM head's input gathered over X; both move every row's C numbers.
    t.add("reduce_scatter", Group::x, vocab_over_x ? passes : 0, M * C * f32, Overlap::none, in_forward);
    t.add(ar, Group::y, passes, M * Cx * f32, Overlap::none, in_forward);
    t.add("all_gather", Group::x, vocab_over_x ? passes : 0, M * C * f32, Overlap::none, in_forward);
    // The norms' statistics, in the forward and in the recomputed forwards.
    t.add(ar, Group::x, passes * (2 * L + 1), norm_stats, Overlap::none, in_forward);
    t.add(ar, Group::x, passes * 2 * L * (forwards - 1), norm_stats, Overlap::none, in_backward);
    // A layer's Linears: a normal one sums its output [M, rows/G_y] over X and its input gradient [M, cols/G_x]
    // over Y; a transposed one the other way round (parallel/linear.h).
    auto const block_bytes = [&](int id, std::uint64_t element) {
        return static_cast<std::uint64_t>(layout.block_rows(id) * layout.block_cols(id)) * element;
    };
    auto const output_group = [&](int id) { return layout.spec(id).row_axis == Axis::y ? Group::x : Group::y; };
    auto const input_group = [&](int id) { return output_group(id) == Group::x ? Group::y : Group::x; };
    std::vector<int> const linears = model.layer_linears();
    for (int id : linears) {
        t.add("all_gather", Group::z_prefetch, forward_gathers * L, block_bytes(id, a), Overlap::previous_linear,
              in_forward);
        t.add("all_gather", Group::z_prefetch, backward_gathers * L, block_bytes(id, a), Overlap::previous_linear,
              in_backward);
    }
    for (int id : linears) {
        chunked(output_group(id), passes * L, layout.block_rows(id), Overlap::later_chunks, in_forward);
        chunked(output_group(id), passes * (forwards - 1) * L, layout.block_rows(id), Overlap::later_chunks,
                in_backward);
    }
    if (!vocab_over_x) head_chunked(Group::x, Vr, Overlap::later_chunks, in_forward);  // logits
    // The cross-entropy's maxima, and Σ exp and the target logit, over the vocabulary's ranks.
    for (Group const group : {Group::y, Group::x}) {
        if (group == Group::x && !vocab_over_x) continue;
        t.add_total("all_reduce_max", group, passes * logit_chunks_n, passes * M * f32, Overlap::none, in_forward);
        t.add_total(ar, group, passes * logit_chunks_n, passes * stats, Overlap::none, in_forward);
    }
    t.add(ar, Group::z, passes, 2 * f64, Overlap::none, in_forward);  // loss and weight sums
    t.add(ar, Group::data, passes, 2 * f64, Overlap::none, in_forward);
    // The step's total loss weight, once: for several passes, and for a pass whose head runs its backward chunk
    // by chunk, which needs every token's share of the loss before the loss is known.
    if (passes > 1 || logit_chunks_n > 1) {
        t.add(ar, Group::z, 1, f64, Overlap::none, in_forward);
        t.add(ar, Group::data, 1, f64, Overlap::none, in_forward);
    }

    // Backward, per pass: each Linear all-reduces dX over its output group under the dW GEMM, and reduce-scatters
    // dW over Z under the rest of the backward.
    // The LM head's dX: a normal Linear's, or over the X·Y plane its X column blocks reduce-scattered after the dW
    // GEMM, then summed over Y, chunk by chunk; the lookup's gradient needs the output gradient gathered over X.
    if (vocab_over_x) {
        t.add_total("reduce_scatter", Group::x, passes * logit_chunks_n, passes * M * C * f32, Overlap::none,
                    in_backward);
        t.add_total(ar, Group::y, passes * logit_chunks_n, passes * M * Cx * f32, Overlap::none, in_backward);
        t.add("all_gather", Group::x, passes, M * C * f32, Overlap::none, in_backward);
    } else {
        head_chunked(Group::y, Cx, Overlap::dw_gemm, in_backward);
    }
    t.add(ar, Group::x, passes * (2 * L + 1), norm_stats, Overlap::none, in_backward);
    for (int id : linears) {
        t.add("reduce_scatter", Group::z, passes * L, block_bytes(id, scatter_elem), Overlap::rest_of_backward,
              in_backward);
    }
    for (int id : linears) {
        chunked(input_group(id), passes * L, layout.block_cols(id), Overlap::dw_gemm, in_backward);
    }
    // The vocabulary blocks' gradients: an untied LM head's as soon as its backward is done, under the layers'
    // backward; the embedding's (with a tied head, the head's too) at the very end.
    std::uint64_t const vocab_block_bytes = Vr * Vh * scatter_elem;
    t.add("reduce_scatter", Group::z, passes * (vocab_blocks - 1), vocab_block_bytes, Overlap::rest_of_backward,
          in_backward);
    t.add("reduce_scatter", Group::z, passes, vocab_block_bytes, Overlap::none, in_backward);

    // Gradient sync, in the last pass: one slice per tensor and layer, over Z for the tensors replicated there
    // (the Z-sharded ones were reduce-scattered; always fp32), then over data for all (in the gradients'
    // communication type). The last ones reported (layer 0, the embeddings) have no backward left to hide behind.
    for (int id = 0; id < layout.count(); ++id) {
        ShardSpec const& shard = layout.spec(id);
        std::uint64_t const slices = static_cast<std::uint64_t>(shard.layers);
        std::uint64_t const slice_numel = static_cast<std::uint64_t>(layout.local_numel(id)) / slices;
        for (Group group : {Group::z, Group::data}) {
            if (group == Group::z && shard.z_flattened) continue;
            std::uint64_t const slice_bytes = slice_numel * (group == Group::z ? f32 : sum_elem);
            t.add(ar, group, slices - 1, slice_bytes, Overlap::rest_of_backward, in_backward);
            t.add(ar, group, 1, slice_bytes, Overlap::none, in_backward);
        }
    }
    // Replicated key/value rows (more Y ranks than key/value heads): their gradients summed over Y, a slot per
    // group of replicas, once the sync is done (in the gradients' communication type).
    for (int id = 0; id < layout.count(); ++id) {
        ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(id);
        if (replicated.factor == 1) continue;
        auto const count = static_cast<std::uint64_t>(replicated.capacity);
        t.add(ar, Group::y, 1, count * static_cast<std::uint64_t>(g.y / replicated.factor) * sum_elem, Overlap::none,
              in_backward);
    }
    t.add(ar, Group::tensor, 1, f64, Overlap::none, in_backward);  // the gradient norm
    return t.take();
}

}  // namespace axonn
