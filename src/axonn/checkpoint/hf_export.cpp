#include "axonn/checkpoint/hf_export.h"

#include "axonn/families/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

namespace axonn {
namespace {

// Where in `weight` its first value that is not finite lies, for the message: a row of the vocabulary's padding
// (a [Vp, C] tensor's rows from V on, which stay zero in training and are not exported) is named as such.
std::string where_not_finite(Tensor const& weight, std::size_t index, ModelConfig const& model) {
    Shape const& shape = weight.shape();
    bool const vocabulary_rows = shape.size() == 2 && shape[0] == model.padded_vocab_size();
    if (!vocabulary_rows) return "";
    auto const row = static_cast<std::int64_t>(index) / shape[1];
    if (row < model.vocab_size()) return fmt::format(" (row {})", row);
    return fmt::format(" (row {}, one of the vocabulary's padding rows {} to {}, which stay zero in training)", row,
                       model.vocab_size(), model.padded_vocab_size() - 1);
}

}  // namespace

void export_hf(CheckpointReader& checkpoint, std::filesystem::path const& out, DType dtype) {
    ModelConfig const& model = checkpoint.index().model;
    // Weights that are not finite were exported without a word (`generate` refused the same checkpoint): a model
    // that Hugging Face's loaders take and that computes nothing but NaN.
    auto const read_finite = [&checkpoint, &model](std::string const& name) {
        Tensor weight = checkpoint.read_tensor(name);
        std::span<float const> const values = std::as_const(weight).span<float>();
        auto const bad = std::find_if(values.begin(), values.end(), [](float value) { return !std::isfinite(value); });
        if (bad != values.end()) {
            auto const index = static_cast<std::size_t>(bad - values.begin());
            checkpoint.damaged(fmt::format("its weight {} holds a value that is not finite (NaN or infinite){}", name,
                                           where_not_finite(weight, index, model)));
        }
        return weight;
    };
    family_of(model).export_hf(model, read_finite, out, dtype);
}

}  // namespace axonn
