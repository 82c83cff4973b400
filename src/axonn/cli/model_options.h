// Options that choose a model, shared by `train`, `bench`, `parity` and `plan`: a preset, then any dimension
// overridden. Llama's presets (llama-tiny, llama3.1-8b, ...) are for the commands that take them (`train`, `plan`).
#pragma once

#include "axonn/model/gpt_config.h"
#include "axonn/model/llama/llama_config.h"
#include "axonn/model/model_config.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace axonn {

class ModelOptions {
public:
    // `takes_llama`: the command runs Llama presets too, and --help lists them.
    ModelOptions(CLI::App& command, std::string default_preset, bool takes_llama = false);
    // The preset with every dimension the user gave replacing its own.
    GptConfig resolve() const;
    // Whether --model names a Llama preset, and that preset with the dimensions given.
    bool names_llama() const;
    LlamaConfig resolve_llama() const;
    // The preset of either family, with the dimensions given.
    ModelConfig resolve_model() const;
    std::string const& preset() const { return preset_; }

private:
    std::string preset_;
    std::vector<std::string> llama_presets_;
    int n_layer_ = 0, n_head_ = 0, n_embd_ = 0, context_ = 0;
    CLI::Option *n_layer_option_, *n_head_option_, *n_embd_option_, *context_option_;
};

}  // namespace axonn
