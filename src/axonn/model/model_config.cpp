#include "axonn/model/model_config.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

namespace axonn {

ModelConfig::AnyConfig const& ModelConfig::held() const {
    AXONN_REQUIRE(config_ != nullptr, "no model was given: choose one with --model");
    return *config_;
}

Architecture ModelConfig::validated_architecture() const {
    validate();
    return architecture();
}

std::string ModelConfig::summary() const {
    Architecture const a = architecture();
    std::string const heads =
        a.kv_heads == a.heads ? fmt::format("{} heads", a.heads)
                              : fmt::format("{} heads ({} key/value)", a.heads, a.kv_heads);
    return fmt::format("{} ({}): {} layers, width {}, {}, MLP {}, context {}, vocabulary {} (padded {})", name(),
                       family(), a.layers, a.width, heads, a.mlp_width, a.context, a.vocab_size, a.padded_vocab);
}

std::string model_differences(ModelConfig const& stored, ModelConfig const& expected) {
    if (stored.family() != expected.family()) {
        return fmt::format("family {} (here {})", stored.family(), expected.family());
    }
    Architecture const a = stored.architecture(), b = expected.architecture();
    std::string differences;
    auto const compare = [&](char const* what, auto const& x, auto const& y) {
        if (x != y) differences += fmt::format("{}{} {} (here {})", differences.empty() ? "" : ", ", what, x, y);
    };
    compare("vocabulary", a.vocab_size, b.vocab_size);
    compare("layers", a.layers, b.layers);
    compare("heads", a.heads, b.heads);
    compare("key/value heads", a.kv_heads, b.kv_heads);
    compare("width", a.width, b.width);
    compare("MLP width", a.mlp_width, b.mlp_width);
    compare("context", a.context, b.context);
    compare("norm epsilon", a.norm_eps, b.norm_eps);
    if (a.rope_inv_freq != b.rope_inv_freq) {
        differences += fmt::format("{}rotary frequencies (rope_theta or rope_scaling)",
                                   differences.empty() ? "" : ", ");
    }
    return differences;
}

}  // namespace axonn
