#include "axonn/perf/traffic_model.h"

#include "axonn/parallel/shard_layout.h"

namespace axonn {
namespace {

using Overlap = PredictedCollective::Overlap;

class TrafficBuilder {
public:
    explicit TrafficBuilder(GridShape const& grid) : grid_(grid) {}

    // `calls` collectives of `bytes_each` on `group`; nothing when the group has one member.
    void add(char const* op, Group group, std::uint64_t calls, std::uint64_t bytes_each, Overlap overlap) {
        if (group_size(group) == 1 || calls == 0) return;
        traffic_.push_back({op, group, calls, calls * bytes_each, overlap});
    }
    std::vector<PredictedCollective> take() { return std::move(traffic_); }

private:
    int group_size(Group group) const {
        switch (group) {
            case Group::data: return grid_.data;
            case Group::z:
            case Group::z_prefetch: return grid_.z;
            case Group::y: return grid_.y;
            case Group::x: return grid_.x;
            case Group::xy_plane: return grid_.x * grid_.y;
            case Group::tensor: return grid_.x * grid_.y * grid_.z;
            case Group::world: return grid_.product();
        }
        return 1;
    }

    GridShape grid_;
    std::vector<PredictedCollective> traffic_;
};

}  // namespace

std::vector<PredictedCollective> predict_step_traffic(StepShape const& step) {
    GridShape const& g = step.grid;
    std::uint64_t const L = step.model.n_layer, C = step.model.n_embd;
    std::uint64_t const Cx = C / g.x, Cy = C / g.y, Vpy = step.model.padded_vocab_size() / g.y;
    std::uint64_t const M = static_cast<std::uint64_t>(step.local_batch()) * step.seq;  // rows per pass
    std::uint64_t const passes = step.micro_batches();
    std::uint64_t const a = step.activation_bytes, f32 = 4, f64 = 8;
    std::uint64_t const stats = 2 * M * f64;  // LayerNorm and cross-entropy: two doubles per token
    TrafficBuilder t(g);
    auto const ar = "all_reduce";

    // Forward, once per pass. The weight blocks' all-gathers over Z could be prefetched a layer ahead.
    t.add("all_gather", Group::z, passes, Vpy * Cx * a, Overlap::next_layer);        // wte block
    t.add(ar, Group::y, passes, M * Cx * a, Overlap::none);                          // embedding
    t.add(ar, Group::x, passes * (2 * L + 1), stats, Overlap::none);                  // LayerNorm statistics
    t.add("all_gather", Group::z, passes * L, 3 * Cy * Cx * a, Overlap::next_layer);  // qkv
    t.add(ar, Group::x, passes * L, M * 3 * Cy * a, Overlap::none);
    t.add("all_gather", Group::z, passes * L, Cx * Cy * a, Overlap::next_layer);  // attention projection
    t.add(ar, Group::y, passes * L, M * Cx * a, Overlap::none);
    t.add("all_gather", Group::z, passes * L, 4 * Cy * Cx * a, Overlap::next_layer);  // MLP up
    t.add(ar, Group::x, passes * L, M * 4 * Cy * a, Overlap::none);
    t.add("all_gather", Group::z, passes * L, Cx * 4 * Cy * a, Overlap::next_layer);  // MLP down
    t.add(ar, Group::y, passes * L, M * Cx * a, Overlap::none);
    t.add(ar, Group::x, passes, M * Vpy * a, Overlap::none);  // logits
    t.add("all_reduce_max", Group::y, passes, M * f32, Overlap::none);
    t.add(ar, Group::y, passes, stats, Overlap::none);  // Σ exp and target logit
    t.add(ar, Group::z, passes, 2 * f64, Overlap::none);  // loss and weight sums
    t.add(ar, Group::data, passes, 2 * f64, Overlap::none);

    // Backward, once per pass: each Linear re-gathers its block, reduce-scatters dW over Z (which can wait for
    // the rest of the backward) and all-reduces dX over its output group (which can hide behind the dW GEMM).
    t.add(ar, Group::y, passes, M * Cx * a, Overlap::dw_gemm);  // LM head dX
    t.add(ar, Group::x, passes * (2 * L + 1), stats, Overlap::none);
    for (std::uint64_t block : {Cx * 4 * Cy, 4 * Cy * Cx, Cx * Cy, 3 * Cy * Cx}) {
        t.add("all_gather", Group::z, passes * L, block * a, Overlap::next_layer);
        t.add("reduce_scatter", Group::z, passes * L, block * f32, Overlap::rest_of_backward);
    }
    t.add(ar, Group::x, passes * L, M * 4 * Cy * a, Overlap::dw_gemm);  // MLP down (transposed): dX over X
    t.add(ar, Group::y, passes * L, M * Cx * a, Overlap::dw_gemm);      // MLP up: dX over Y
    t.add(ar, Group::x, passes * L, M * Cy * a, Overlap::dw_gemm);      // attention projection
    t.add(ar, Group::y, passes * L, M * Cx * a, Overlap::dw_gemm);      // qkv
    t.add("reduce_scatter", Group::z, passes, Vpy * Cx * f32, Overlap::rest_of_backward);  // wte

    // Gradient sync and norm, once per step, in fp32.
    ShardLayout const layout(step.model, GridPosition{g});
    t.add(ar, Group::z, 1, static_cast<std::uint64_t>(layout.total() - layout.replicated_begin()) * f32, Overlap::none);
    constexpr std::uint64_t bucket = std::uint64_t{1} << 24;  // floats, as Gpt::sync_gradients
    std::uint64_t const total = static_cast<std::uint64_t>(layout.total());
    std::uint64_t const buckets = (total + bucket - 1) / bucket;
    if (g.data > 1) {
        t.add(ar, Group::data, buckets - 1, bucket * f32, Overlap::none);
        t.add(ar, Group::data, 1, (total - (buckets - 1) * bucket) * f32, Overlap::none);
    }
    t.add(ar, Group::tensor, 1, f64, Overlap::none);
    return t.take();
}

}  // namespace axonn
