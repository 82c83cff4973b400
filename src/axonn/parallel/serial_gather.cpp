#include "axonn/parallel/serial_gather.h"

namespace axonn {

Tensor gather_serial_tensor(ShardLayout const& layout, ProcessGrid& grid, int id, float const* local) {
    ShardSpec const& spec = layout.spec(id);
    Tensor full({spec.layers * spec.rows * spec.cols}, DType::f32);
    if (layout.owns(id) && grid.coord(Axis::data) == 0) {
        float* serial = full.data<float>();
        for (std::int64_t i = 0; i < layout.local_numel(id); ++i) serial[layout.serial_index(id, i)] = local[i];
        // A replicated row is summed in from its first replica only.
        ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(id);
        if (grid.coord(Axis::y) % replicated.factor != 0) {
            for (auto const& [begin, end] : replicated.runs) {
                for (std::int64_t i = begin; i < end; ++i) serial[layout.serial_index(id, i)] = 0.0f;
            }
        }
    }
    grid.comm(Group::world).all_reduce(full.data<float>(), static_cast<std::size_t>(full.numel()));
    return full;
}

}  // namespace axonn
