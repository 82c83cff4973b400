#include "axonn/parallel/serial_gather.h"

#include <algorithm>

namespace axonn {
namespace {

// Local elements [begin, end) of tensor `id` copied to their places in `serial`, run by run of consecutive serial
// indices; `local` null writes zeros instead.
void place_in_serial(ShardLayout const& layout, int id, std::int64_t begin, std::int64_t end, float const* local,
                     float* serial) {
    for (std::int64_t i = begin; i < end;) {
        std::int64_t const run = std::min(layout.serial_run(id, i), end - i);
        float* to = serial + layout.serial_index(id, i);
        if (local != nullptr) {
            std::copy(local + i, local + i + run, to);
        } else {
            std::fill(to, to + run, 0.0f);
        }
        i += run;
    }
}

}  // namespace

std::vector<Tensor> gather_serial_tensors(ShardLayout const& layout, ProcessGrid& grid, float const* local) {
    // Each tensor's place in one buffer of all of them, in id order: tensor `id` at [starts[id], starts[id + 1]).
    auto const count = static_cast<std::size_t>(layout.count());
    std::vector<std::int64_t> starts(count + 1, 0);
    for (std::size_t id = 0; id < count; ++id) {
        ShardSpec const& spec = layout.spec(static_cast<int>(id));
        starts[id + 1] = starts[id] + spec.layers * spec.rows * spec.cols;
    }
    Tensor all({starts.back()}, DType::f32);
    if (grid.coord(Axis::data) == 0) {
        for (int id = 0; id < layout.count(); ++id) {
            if (!layout.owns(id)) continue;
            float* serial = all.data<float>() + starts[static_cast<std::size_t>(id)];
            place_in_serial(layout, id, 0, layout.local_numel(id), local + layout.offset(id), serial);
            // A replicated row is summed in from its first replica only.
            ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(id);
            if (grid.coord(Axis::y) % replicated.factor != 0) {
                for (auto const& [begin, end] : replicated.runs) {
                    place_in_serial(layout, id, begin, end, nullptr, serial);
                }
            }
        }
    }
    grid.comm(Group::world).all_reduce(all.data<float>(), static_cast<std::size_t>(all.numel()));
    std::vector<Tensor> tensors;
    tensors.reserve(count);
    for (std::size_t id = 0; id < count; ++id) {
        float const* from = all.data<float>() + starts[id];
        Tensor& tensor = tensors.emplace_back(Shape{starts[id + 1] - starts[id]}, DType::f32);
        std::copy(from, from + tensor.numel(), tensor.data<float>());
    }
    return tensors;
}

}  // namespace axonn
