#include "axonn/parallel/grad_scatter.h"

#include <algorithm>

namespace axonn {

std::int64_t GradScatter::buffer_numel(int z, std::int64_t max_block_numel, int ring) {
    if (z == 1) return 0;
    return ring * (max_block_numel + max_block_numel / z);
}

GradScatter::GradScatter(Backend& backend, Communicator& z, std::int64_t max_block_numel, int ring, bool overlap)
    : backend_(backend), z_(z), overlap_(overlap), max_block_numel_(max_block_numel),
      storage_({std::max<std::int64_t>(1, buffer_numel(z.size(), max_block_numel, ring))}, DType::f32),
      ring_(z.size() == 1 ? 0 : static_cast<std::size_t>(ring)) {}

GradTarget GradScatter::target(float* shard, GradWrite write) {
    if (z_.size() == 1) return {shard, write};
    Pending& slot = ring_[next_slot_];
    finish(slot);  // its buffer comes round again
    shard_ = shard;
    write_ = write;
    return {storage_.data<float>() + static_cast<std::int64_t>(next_slot_) * max_block_numel_, GradWrite::overwrite};
}

void GradScatter::submit(std::int64_t block_numel) {
    if (z_.size() == 1) return;
    std::size_t const slot_index = next_slot_;
    next_slot_ = (next_slot_ + 1) % ring_.size();
    Pending& slot = ring_[slot_index];
    std::int64_t const shard_numel = block_numel / z_.size();
    float const* block = storage_.data<float>() + static_cast<std::int64_t>(slot_index) * max_block_numel_;
    float* received = storage_.data<float>() + static_cast<std::int64_t>(ring_.size()) * max_block_numel_ +
                      static_cast<std::int64_t>(slot_index) * (max_block_numel_ / z_.size());
    bool const accumulate = write_ == GradWrite::accumulate;
    slot.shard = shard_;
    slot.received = accumulate ? received : nullptr;
    slot.shard_numel = shard_numel;
    slot.scatter = z_.start_reduce_scatter(block, accumulate ? received : shard_, static_cast<std::size_t>(shard_numel));
    if (!overlap_) finish(slot);
}

void GradScatter::finish(Pending& pending) {
    if (pending.shard == nullptr) return;
    pending.scatter.wait();
    if (pending.received != nullptr) {
        backend_.residual_forward(pending.shard, pending.shard, pending.received, pending.shard_numel);
    }
    pending.shard = nullptr;
}

void GradScatter::complete(float const* shard) {
    for (Pending& pending : ring_) {
        if (pending.shard == shard) finish(pending);
    }
}

void GradScatter::complete_all() {
    for (Pending& pending : ring_) finish(pending);
}

}  // namespace axonn
