#include "axonn/parallel/replicated_rows.h"

#include "axonn/parallel/rounded_sum.h"

#include <algorithm>

namespace axonn {
namespace {

// The buffer that sums replicated rows' gradients over Y: a slot per group of replicas, each room for the rows
// (the same size on every rank, whatever its Z chunk holds).
std::int64_t sum_numel(ShardLayout const& layout, int y) {
    std::int64_t largest = 0;
    for (int id = 0; id < layout.count(); ++id) {
        ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(id);
        largest = std::max(largest, replicated.capacity * (y / replicated.factor));
    }
    return largest;
}

std::int64_t staging_numel(ShardLayout const& layout, int y, DType sum_comm) {
    return sum_comm == DType::bf16 ? sum_numel(layout, y) : 0;
}

}  // namespace

ReplicatedRowSum::ReplicatedRowSum(ProcessGrid& grid, Backend& backend, ShardLayout const& layout, DType sum_comm)
    : grid_(grid), backend_(backend), layout_(layout), sum_comm_(sum_comm),
      sums_({buffer_numel(sum_numel(layout, grid.size(Axis::y)))}, DType::f32, backend.memory()),
      staging_({buffer_numel(staging_numel(layout, grid.size(Axis::y), sum_comm))}, DType::bf16, backend.memory()) {}

std::int64_t ReplicatedRowSum::workspace_bytes(ShardLayout const& layout, int y, DType sum_comm) {
    return buffer_numel(sum_numel(layout, y)) * static_cast<std::int64_t>(sizeof(float)) +
           buffer_numel(staging_numel(layout, y, sum_comm)) * static_cast<std::int64_t>(sizeof(bfloat16));
}

void ReplicatedRowSum::sum(float* grads) {
    Communicator& y = grid_.comm(Group::y);
    for (int id = 0; id < layout_.count(); ++id) {
        ShardLayout::ReplicatedRuns const replicated = layout_.replicated_runs(id);
        if (replicated.factor == 1) continue;
        std::int64_t const count = replicated.capacity;
        int const slots = y.size() / replicated.factor, slot = grid_.coord(Axis::y) / replicated.factor;
        // Copies and zeros through the backend: the gradients may be in a device's memory.
        float* sums = sums_.data<float>();
        backend_.zero(sums, slots * count * static_cast<std::int64_t>(sizeof(float)));
        float* gradient = grads + layout_.offset(id);
        float* mine = sums + slot * count;
        for (auto const& [begin, end] : replicated.runs) {
            backend_.convert(mine, DType::f32, gradient + begin, DType::f32, end - begin);
            mine += end - begin;
        }
        rounded_all_reduce(backend_, y, sum_comm_, sums, static_cast<std::size_t>(slots * count),
                           staging_.data<bfloat16>());
        float const* summed = sums + slot * count;
        for (auto const& [begin, end] : replicated.runs) {
            backend_.convert(gradient + begin, DType::f32, summed, DType::f32, end - begin);
            summed += end - begin;
        }
    }
}

}  // namespace axonn
