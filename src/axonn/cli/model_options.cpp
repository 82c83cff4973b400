#include "axonn/cli/model_options.h"

#include "axonn/core/error.h"

#include <fmt/ranges.h>

#include <algorithm>

namespace axonn {

ModelOptions::ModelOptions(CLI::App& command, std::string default_preset)
    : preset_(std::move(default_preset)), llama_presets_(llama_preset_names()) {
    std::string const presets =
        fmt::format("GPT-2: {}; Llama: {}", fmt::join(gpt_preset_names(), ", "), fmt::join(llama_presets_, ", "));
    command.add_option("--model", preset_, fmt::format("model preset: {}", presets))->capture_default_str();
    n_layer_option_ = command.add_option("--n-layer", n_layer_, "override the preset's number of layers");
    n_head_option_ = command.add_option("--n-head", n_head_, "override the preset's number of attention heads");
    n_embd_option_ = command.add_option("--n-embd", n_embd_, "override the preset's width (channels)");
    context_option_ = command.add_option("--context", context_, "override the preset's context length");
}

GptConfig ModelOptions::resolve_gpt() const {
    GptConfig config = gpt_preset(preset_);
    if (n_layer_option_->count()) config.n_layer = n_layer_;
    if (n_head_option_->count()) config.n_head = n_head_;
    if (n_embd_option_->count()) config.n_embd = n_embd_;
    if (context_option_->count()) config.max_seq = context_;
    config.validate();
    return config;
}

bool ModelOptions::names_llama() const {
    return std::find(llama_presets_.begin(), llama_presets_.end(), preset_) != llama_presets_.end();
}

LlamaConfig ModelOptions::resolve_llama() const {
    LlamaConfig config = llama_preset(preset_);
    if (n_layer_option_->count()) config.num_hidden_layers = n_layer_;
    if (n_head_option_->count()) config.num_attention_heads = n_head_;
    if (n_embd_option_->count()) config.hidden_size = n_embd_;
    if (context_option_->count()) config.max_position_embeddings = context_;
    config.validate();
    return config;
}

ModelConfig ModelOptions::resolve_model() const {
    if (names_llama()) return resolve_llama();
    return resolve_gpt();
}

}  // namespace axonn
