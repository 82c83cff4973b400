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

Tensor gather_serial_tensor(ShardLayout const& layout, ProcessGrid& grid, int id, float const* local) {
    ShardSpec const& spec = layout.spec(id);
    Tensor full({spec.layers * spec.rows * spec.cols}, DType::f32);
    if (layout.owns(id) && grid.coord(Axis::data) == 0) {
        float* serial = full.data<float>();
        place_in_serial(layout, id, 0, layout.local_numel(id), local, serial);
        // A replicated row is summed in from its first replica only.
        ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(id);
        if (grid.coord(Axis::y) % replicated.factor != 0) {
            for (auto const& [begin, end] : replicated.runs) place_in_serial(layout, id, begin, end, nullptr, serial);
        }
    }
    grid.comm(Group::world).all_reduce(full.data<float>(), static_cast<std::size_t>(full.numel()));
    return full;
}

}  // namespace axonn
