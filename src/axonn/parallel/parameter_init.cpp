#include "axonn/parallel/parameter_init.h"

#include "axonn/core/rng.h"

namespace axonn {

void init_parameters(ShardLayout const& layout, std::span<float> params, std::uint64_t seed) {
    for (int id = 0; id < layout.count(); ++id) {
        ParamDecl const& param = layout.param(id);
        float* values = params.data() + layout.offset(id);
        std::int64_t const numel = layout.local_numel(id);
        PhiloxKey const key{seed, static_cast<std::uint64_t>(id) + 1};
        for (std::int64_t i = 0; i < numel; ++i) {
            switch (param.init) {
                case ParamInit::normal: {
                    std::int64_t const index = layout.serial_index(id, i);
                    std::int64_t const row = index % (param.rows * param.cols) / param.cols;
                    // Padding rows (the embedding's beyond the vocabulary) are never looked up and their logits
                    // are masked: exactly zero.
                    bool const padding = param.real_rows >= 0 && row >= param.real_rows;
                    values[i] = padding ? 0.0f : static_cast<float>(param.init_std * standard_normal(key, index));
                    break;
                }
                case ParamInit::ones: values[i] = 1.0f; break;
                case ParamInit::zeros: values[i] = 0.0f; break;
            }
        }
    }
}

}  // namespace axonn
