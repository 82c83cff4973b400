#include "axonn/checkpoint/hf_export.h"

#include "axonn/families/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

namespace axonn {

void export_hf(CheckpointReader& checkpoint, std::filesystem::path const& out, DType dtype) {
    ModelConfig const& model = checkpoint.index().model;
    // Weights that are not finite were exported without a word (`generate` refused the same checkpoint): a model
    // that Hugging Face's loaders take and that computes nothing but NaN.
    auto const read_finite = [&checkpoint](std::string const& name) {
        Tensor weight = checkpoint.read_tensor(name);
        std::span<float const> const values = std::as_const(weight).span<float>();
        if (!std::all_of(values.begin(), values.end(), [](float value) { return std::isfinite(value); })) {
            checkpoint.damaged(fmt::format("its weight {} holds a value that is not finite (NaN or infinite)", name));
        }
        return weight;
    };
    family_of(model).export_hf(model, read_finite, out, dtype);
}

}  // namespace axonn
