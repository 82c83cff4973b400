#include "axonn/parallel/weight_gather.h"

#include "axonn/core/error.h"

namespace axonn {

std::int64_t WeightGather::buffer_numel(int z, std::int64_t max_block_numel, std::int64_t cached_numel) {
    if (z == 1) return 0;
    return cached_numel > 0 ? cached_numel : 2 * max_block_numel;
}

WeightGather::WeightGather(Communicator& z, DType dtype, std::int64_t max_block_numel, bool overlap,
                           std::int64_t cached_numel, Memory memory)
    : z_(z), dtype_(dtype), overlap_(overlap), caching_(cached_numel > 0),
      storage_({axonn::buffer_numel(buffer_numel(z.size(), max_block_numel, cached_numel))}, dtype, memory) {
    AXONN_INVARIANT(dtype == DType::f32 || dtype == DType::bf16, "weights are gathered in f32 or bf16, not {}",
                    dtype_name(dtype));
    if (z.size() == 1 || caching_) return;
    ring_.resize(2);
    ring_[1].offset = max_block_numel;
}

void* WeightGather::buffer(Slot const& slot) {
    return static_cast<char*>(storage_.raw_data()) + slot.offset * static_cast<std::int64_t>(dtype_size(dtype_));
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
        AXONN_INVARIANT(cache_used_ + weight.block_numel <= storage_.numel(),
                        "the weight cache of {} elements is too small", storage_.numel());
        entry->second.offset = cache_used_;
        cache_used_ += weight.block_numel;
    }
    return entry->second;
}

void WeightGather::issue(std::size_t use) {
    Slot& slot = slot_for(use);
    WeightUse const& weight = schedule_[use];
    if (slot.holds == weight.shard && (caching_ || slot.use == use)) return;  // gathered, or under way
    slot.gather.wait();  // the slot's previous block is no longer in use: its GEMM has run
    auto const count = static_cast<std::size_t>(weight.block_numel / z_.size());
    slot.gather = z_.start_all_gather(weight.shard, buffer(slot), dtype_, count);
    slot.holds = weight.shard;
    slot.use = use;
}

WeightView WeightGather::next() {
    AXONN_INVARIANT(next_use_ < schedule_.size(), "a pass used more weights than its schedule of {}", schedule_.size());
    std::size_t const use = next_use_++;
    if (z_.size() == 1) return {schedule_[use].shard, dtype_};
    issue(use);
    Slot& slot = slot_for(use);
    slot.gather.wait();
    if (overlap_ && use + 1 < schedule_.size()) issue(use + 1);
    return {buffer(slot), dtype_};
}

void WeightGather::invalidate() {
    for (auto& [shard, slot] : cache_) {
        slot.gather.wait();
        slot.holds = nullptr;
    }
}

}  // namespace axonn
