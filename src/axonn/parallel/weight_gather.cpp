#include "axonn/parallel/weight_gather.h"

#include "axonn/core/error.h"

#include <algorithm>

namespace axonn {

std::int64_t WeightGather::buffer_numel(int z, std::int64_t max_block_numel, std::int64_t cached_numel) {
    if (z == 1) return 0;
    return cached_numel > 0 ? cached_numel : 2 * max_block_numel;
}

WeightGather::WeightGather(Communicator& z, std::int64_t max_block_numel, bool overlap, std::int64_t cached_numel)
    : z_(z), overlap_(overlap), caching_(cached_numel > 0),
      storage_({std::max<std::int64_t>(1, buffer_numel(z.size(), max_block_numel, cached_numel))}, DType::f32) {
    if (z.size() == 1 || caching_) return;
    ring_.resize(2);
    ring_[0].buffer = storage_.data<float>();
    ring_[1].buffer = storage_.data<float>() + max_block_numel;
}

void WeightGather::begin_pass(std::vector<WeightUse> schedule) {
    schedule_ = std::move(schedule);
    next_use_ = 0;
    if (z_.size() == 1) return;
    for (Slot& slot : ring_) {  // a pass that stopped early (an evaluation) may have left a prefetch behind
        slot.gather.wait();
        slot.holds = nullptr;
    }
    if (overlap_ && !schedule_.empty()) issue(0);
}

WeightGather::Slot& WeightGather::slot_for(std::size_t use) {
    if (!caching_) return ring_[use % 2];
    WeightUse const& weight = schedule_[use];
    auto [entry, added] = cache_.try_emplace(weight.shard);
    if (added) {
        invariant(cache_used_ + weight.block_numel <= storage_.numel(), "the weight cache of {} elements is too small",
                  storage_.numel());
        entry->second.buffer = storage_.data<float>() + cache_used_;
        cache_used_ += weight.block_numel;
    }
    return entry->second;
}

void WeightGather::issue(std::size_t use) {
    Slot& slot = slot_for(use);
    WeightUse const& weight = schedule_[use];
    if (slot.holds == weight.shard && (caching_ || slot.use == use)) return;  // gathered, or under way
    slot.gather.wait();  // the slot's previous block is no longer in use: its GEMM has run
    slot.gather = z_.start_all_gather(weight.shard, slot.buffer,
                                      static_cast<std::size_t>(weight.block_numel / z_.size()));
    slot.holds = weight.shard;
    slot.use = use;
}

float const* WeightGather::next() {
    invariant(next_use_ < schedule_.size(), "a pass used more weights than its schedule of {}", schedule_.size());
    std::size_t const use = next_use_++;
    if (z_.size() == 1) return schedule_[use].shard;
    issue(use);
    Slot& slot = slot_for(use);
    slot.gather.wait();
    if (overlap_ && use + 1 < schedule_.size()) issue(use + 1);
    return slot.buffer;
}

void WeightGather::invalidate() {
    for (auto& [shard, slot] : cache_) {
        slot.gather.wait();
        slot.holds = nullptr;
    }
}

}  // namespace axonn
