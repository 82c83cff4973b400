#include "axonn/parallel/parameter_init.h"

#include "axonn/core/rng.h"

#include <algorithm>

namespace axonn {
namespace {

// Local elements [i, i + count) of a normal-initialised parameter, whose serial indices run from `index` on.
void draw_normal_run(ParamDecl const& param, PhiloxKey const& key, std::int64_t index, std::int64_t count,
                     float* values) {
    for (std::int64_t k = 0; k < count; ++k, ++index) {
        std::int64_t const row = index % (param.rows * param.cols) / param.cols;
        // Padding rows (the embedding's beyond the vocabulary) are never looked up and their logits are masked:
        // exactly zero.
        bool const padding = param.real_rows >= 0 && row >= param.real_rows;
        values[k] = padding ? 0.0f : static_cast<float>(param.init_std * standard_normal(key, index));
    }
}

}  // namespace

void init_parameters(ShardLayout const& layout, std::span<float> params, std::uint64_t seed) {
    for (int id = 0; id < layout.count(); ++id) {
        ParamDecl const& param = layout.param(id);
        float* values = params.data() + layout.offset(id);
        std::int64_t const numel = layout.local_numel(id);
        switch (param.init) {
            case ParamInit::normal: {
                PhiloxKey const key{seed, static_cast<std::uint64_t>(id) + 1};
                // Run by run of consecutive serial indices: one index computation per run, not per element.
                for (std::int64_t i = 0; i < numel;) {
                    std::int64_t const run = layout.serial_run(id, i);
                    draw_normal_run(param, key, layout.serial_index(id, i), run, values + i);
                    i += run;
                }
                break;
            }
            case ParamInit::ones: std::fill(values, values + numel, 1.0f); break;
            case ParamInit::zeros: std::fill(values, values + numel, 0.0f); break;
        }
    }
}

}  // namespace axonn
