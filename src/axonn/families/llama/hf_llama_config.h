// Hugging Face's Llama config.json (LlamaConfig in transformers), read into axonn's LlamaConfig. Every field is
// checked: one that changes the model in a way axonn does not reproduce (another activation, tied embeddings,
// biases, another kind of rope scaling, ...) or that axonn does not know at all is refused by name, so that a
// model is never imported as something else.
#pragma once

#include "axonn/families/llama/llama_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace axonn {

// `text` is the file's content and `source` names it in errors.
LlamaConfig parse_hf_llama_config(std::string const& text, std::string const& source);
// dir/config.json
LlamaConfig read_hf_llama_config(std::filesystem::path const& dir);
// The config as Hugging Face writes it (LlamaForCausalLM); parse_hf_llama_config reads it back as it was.
// `torch_dtype` names the weights' type ("float32" or "bfloat16").
nlohmann::json hf_llama_config_json(LlamaConfig const& config, std::string const& torch_dtype);

}  // namespace axonn
