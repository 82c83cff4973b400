// Options that choose a model, shared by every command that builds one from a preset (`train`, `bench`, `parity`,
// `tune`, `plan`): a preset of any family, then any dimension overridden; and the help of the options that name a
// model folder.
#pragma once

#include "axonn/model/model_config.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

class ModelOptions {
public:
    ModelOptions(CLI::App& command, std::string default_preset);
    // The preset of any family, with every dimension the user gave replacing its own.
    ModelConfig resolve_model() const;
    std::string const& preset() const { return preset_; }
    // Whether the command line (or a config file) named a preset (--model), and the shape options it gave.
    bool preset_given() const;
    ShapeOverrides overrides() const;

private:
    std::string preset_;
    int n_layer_ = 0, n_head_ = 0, n_embd_ = 0, context_ = 0;
    CLI::Option *preset_option_, *n_layer_option_, *n_head_option_, *n_embd_option_, *context_option_;
};

// "an axonn checkpoint (or a --ckpt-dir: its newest) or a Hugging Face GPT-2 or Llama folder": what --model-dir
// takes, every registered family named.
std::string model_source_help();

}  // namespace axonn
