#include "axonn/parallel/grad_scatter.h"

namespace axonn {

std::int64_t GradScatter::buffer_numel(int z, std::int64_t max_block_numel, int ring) {
    if (z == 1) return 0;
    return ring * (max_block_numel + max_block_numel / z);
}

std::int64_t GradScatter::staging_numel(int z, std::int64_t max_block_numel, int ring, DType comm_dtype) {
    return comm_dtype == DType::bf16 ? buffer_numel(z, max_block_numel, ring) : 0;
}

GradScatter::GradScatter(Backend& backend, Communicator& z, std::int64_t max_block_numel, int ring, bool overlap,
                         DType comm_dtype)
    : backend_(backend), z_(z), overlap_(overlap), comm_dtype_(comm_dtype), max_block_numel_(max_block_numel),
      storage_({axonn::buffer_numel(buffer_numel(z.size(), max_block_numel, ring))}, DType::f32,
               backend.memory()),
      staging_({axonn::buffer_numel(staging_numel(z.size(), max_block_numel, ring, comm_dtype))},
               DType::bf16, backend.memory()),
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
    // The slot's block, and where its scattered shard arrives, at the same offsets in the fp32 ring and (with
    // bf16 communication) in its bf16 staging copy.
    std::int64_t const block_offset = static_cast<std::int64_t>(slot_index) * max_block_numel_;
    std::int64_t const received_offset = static_cast<std::int64_t>(ring_.size()) * max_block_numel_ +
                                         static_cast<std::int64_t>(slot_index) * (max_block_numel_ / z_.size());
    float const* block = storage_.data<float>() + block_offset;
    bool const accumulate = write_ == GradWrite::accumulate;
    slot.shard = shard_;
    slot.received = accumulate ? storage_.data<float>() + received_offset : nullptr;
    slot.shard_numel = shard_numel;
    // Where the sums round, the bf16 copies that travel sit at the same offsets in the staging copy.
    bfloat16* staging = rounds(z_, comm_dtype_) ? staging_.data<bfloat16>() : nullptr;
    slot.scatter = start_rounded_reduce_scatter(backend_, z_, comm_dtype_, block, accumulate ? slot.received : shard_,
                                                static_cast<std::size_t>(shard_numel),
                                                staging ? staging + block_offset : nullptr,
                                                staging ? staging + received_offset : nullptr);
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
