#include "axonn/cli/model_options.h"

#include "axonn/core/error.h"
#include "axonn/families/registry.h"

#include <fmt/ranges.h>

#include <optional>
#include <vector>

namespace axonn {

namespace {

// "GPT-2: gpt2-micro, ...; Llama: llama-tiny, ..."
std::string presets_by_family() {
    std::vector<std::string> families;
    for (ModelFamily const* family : model_families()) {
        families.push_back(fmt::format("{}: {}", family->label, fmt::join(family->preset_names(), ", ")));
    }
    return fmt::format("{}", fmt::join(families, "; "));
}

}  // namespace

ModelOptions::ModelOptions(CLI::App& command, std::string default_preset) : preset_(std::move(default_preset)) {
    preset_option_ = command.add_option("--model", preset_, fmt::format("model preset: {}", presets_by_family()))
                         ->capture_default_str();
    n_layer_option_ = command.add_option("--n-layer", n_layer_, "override the preset's number of layers");
    n_head_option_ = command.add_option("--n-head", n_head_, "override the preset's number of attention heads");
    n_embd_option_ = command.add_option("--n-embd", n_embd_, "override the preset's width (channels)");
    context_option_ = command.add_option("--context", context_, "override the preset's context length");
}

bool ModelOptions::preset_given() const { return preset_option_->count() > 0; }

ShapeOverrides ModelOptions::overrides() const {
    auto const given = [](CLI::Option const* option, int value) {
        return option->count() ? std::optional(value) : std::nullopt;
    };
    return {given(n_layer_option_, n_layer_), given(n_head_option_, n_head_), given(n_embd_option_, n_embd_),
            given(context_option_, context_)};
}

ModelConfig ModelOptions::resolve_model() const {
    ModelConfig const config = model_preset(preset_).with_overrides(overrides());
    config.validate();
    return config;
}

std::string model_source_help() {
    return fmt::format("an axonn checkpoint (or a --ckpt-dir: its newest) or a Hugging Face {} folder",
                       family_labels());
}

}  // namespace axonn
