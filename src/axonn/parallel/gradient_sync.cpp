#include "axonn/parallel/gradient_sync.h"

#include "axonn/core/error.h"

namespace axonn {

GradientSync::GradientSync(ShardLayout const& layout, Communicator& z, Communicator& data, GradScatter& scatter,
                           bool overlap)
    : layout_(layout), z_(z), data_(data), scatter_(scatter), overlap_(overlap) {}

void GradientSync::begin(float* grads) {
    invariant(awaiting_data_.empty() && data_sums_.empty(), "a gradient sync began before the last one finished");
    grads_ = grads;
}

void GradientSync::final(std::vector<GradSlice> const& slices) {
    start_data_sums();
    for (GradSlice const& slice : slices) {
        ShardSpec const& spec = layout_.spec(slice.id);
        std::int64_t const numel = layout_.local_numel(slice.id) / spec.layers;
        InFlight in_flight{grads_ + layout_.offset(slice.id) + slice.layer * numel, static_cast<std::size_t>(numel),
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
        data_sums_.push_back(data_.start_all_reduce(in_flight.data, in_flight.numel));
        if (!overlap_) data_sums_.back().wait();
    }
    awaiting_data_.clear();
}

void GradientSync::finish() {
    start_data_sums();
    for (Collective& sum : data_sums_) sum.wait();
    data_sums_.clear();
}

}  // namespace axonn
