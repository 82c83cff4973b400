#include "axonn/parallel/gradient_sync.h"

#include "axonn/core/error.h"

#include <cmath>

namespace axonn {

std::int64_t GradientSync::mirror_numel(ShardLayout const& layout, int data, DType comm_dtype) {
    return comm_dtype == DType::bf16 && data > 1 ? layout.total() : 0;
}

GradientSync::GradientSync(ShardLayout const& layout, Backend& backend, Communicator& z, Communicator& data,
                           GradScatter& scatter, bool overlap, DType comm_dtype)
    : layout_(layout), backend_(backend), z_(z), data_(data), scatter_(scatter), overlap_(overlap),
      comm_dtype_(comm_dtype),
      mirror_({axonn::buffer_numel(mirror_numel(layout, data.size(), comm_dtype))}, DType::bf16,
              backend.memory()) {}

void GradientSync::begin(float* grads) {
    AXONN_INVARIANT(awaiting_data_.empty() && data_sums_.empty(), "a gradient sync began before the last one finished");
    grads_ = grads;
}

void GradientSync::final(std::vector<GradSlice> const& slices) {
    start_data_sums();
    for (GradSlice const& slice : slices) {
        ShardSpec const& spec = layout_.spec(slice.param);
        std::int64_t const numel = layout_.local_numel(slice.param) / spec.layers;
        InFlight in_flight{grads_ + layout_.offset(slice.param) + slice.layer * numel, static_cast<std::size_t>(numel),
                           spec.z_flattened, {}};
        if (!spec.z_flattened) {
            in_flight.z_sum = z_.start_all_reduce(in_flight.data, in_flight.numel);
            if (!overlap_) in_flight.z_sum.wait();
        }
        awaiting_data_.push_back(std::move(in_flight));
    }
    // Without a Z split there is no Z sum to wait for: the data sum starts at once.
    if (z_.size() == 1) start_data_sums();
}

void GradientSync::start_data_sums() {
    for (InFlight& in_flight : awaiting_data_) {
        if (in_flight.z_sharded) {
            scatter_.complete(in_flight.data);
        } else {
            in_flight.z_sum.wait();
        }
        // A bf16 copy that travels sits at the gradient's own offset in the mirror.
        bfloat16* mirror = rounds(data_, comm_dtype_) ? mirror_.data<bfloat16>() + (in_flight.data - grads_) : nullptr;
        data_sums_.push_back(
            start_rounded_all_reduce(backend_, data_, comm_dtype_, in_flight.data, in_flight.numel, mirror));
        if (!overlap_) data_sums_.back().wait();
    }
    awaiting_data_.clear();
}

void GradientSync::finish() {
    start_data_sums();
    for (RoundedSum& sum : data_sums_) sum.wait();
    data_sums_.clear();
}

double gradient_norm(ShardLayout const& layout, Backend& backend, float const* grads, ProcessGrid& grid) {
    double squares = 0.0;
    for (int id = 0; id < layout.count(); ++id) {
        if (!layout.owns(id)) continue;
        float const* grad = grads + layout.offset(id);
        squares += backend.sum_of_squares(grad, layout.local_numel(id));
        // Rows held by `factor` ranks (replicated key/value heads) count once over them.
        ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(id);
        for (auto const& [begin, end] : replicated.runs) {
            squares -= (1.0 - 1.0 / replicated.factor) * backend.sum_of_squares(grad + begin, end - begin);
        }
    }
    grid.comm(Group::tensor).all_reduce(&squares, 1);
    return std::sqrt(squares);
}

}  // namespace axonn
