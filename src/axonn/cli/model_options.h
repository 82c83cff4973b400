// Options that choose a model, shared by `train` and `bench`: a preset, then any dimension overridden.
#pragma once

#include "axonn/model/gpt_config.h"

#include <CLI/CLI.hpp>

#include <string>

namespace axonn {

class ModelOptions {
public:
    ModelOptions(CLI::App& command, std::string default_preset);
    // The preset with every dimension the user gave replacing its own.
    GptConfig resolve() const;

private:
    std::string preset_;
    int n_layer_ = 0, n_head_ = 0, n_embd_ = 0, context_ = 0;
    CLI::Option *n_layer_option_, *n_head_option_, *n_embd_option_, *context_option_;
};

}  // namespace axonn
