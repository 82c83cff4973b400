#include "axonn/checkpoint/checkpoint_tensors.h"

#include "axonn/checkpoint/checkpoint_index.h"

namespace axonn {

std::vector<CheckpointTensor> checkpoint_tensors(ShardLayout const& layout, LocalTensors const& local) {
    std::vector<CheckpointTensor> tensors;
    auto const add = [&](std::span<float const> buffer, auto&& name_of) {
        if (buffer.empty()) return;
        for (int id = 0; id < layout.count(); ++id) {
            auto const offset = static_cast<std::size_t>(layout.offset(id));
            auto const count = static_cast<std::size_t>(layout.local_numel(id));
            ParamDecl const& param = layout.param(id);
            tensors.push_back({name_of(param.name), id, param.shape, buffer.subspan(offset, count)});
        }
    };
    add(local.params, [](std::string const& name) { return name; });
    add(local.exp_avg, [](std::string const& name) { return exp_avg_name(name); });
    add(local.exp_avg_sq, [](std::string const& name) { return exp_avg_sq_name(name); });
    return tensors;
}

}  // namespace axonn
