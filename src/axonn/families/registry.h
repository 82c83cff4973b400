// The model families axonn knows and what the rest of axonn asks of one. Each family lives in its own folder,
// families/<name>/: its config and presets, its parameter table and decoder_architecture, its fields in a
// checkpoint's index.json, its Hugging Face names in and out, and the ModelFamily that gathers them
// (<name>_family.cpp). registry.cpp lists the families, one line each; nothing else in axonn names a family to
// choose between them.
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/model/model_config.h"
#include "axonn/parallel/shard_layout.h"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// A tensor of a checkpoint by its axonn name, whole and in its serial layout (padding rows included): what an
// export reads.
using ReadTensor = std::function<Tensor(std::string const& name)>;

struct ModelFamily {
    std::string_view name;           // "gpt2": ModelConfig::family(), index.json's "family"
    std::string_view label;          // "GPT-2": in help and messages
    std::string_view hf_model_type;  // config.json's model_type in a Hugging Face folder: "gpt2"
    std::string_view hf_class;       // transformers' class that loads an export: "GPT2LMHeadModel"
    bool exports_bf16 = false;       // whether `axonn export --dtype bf16` applies (else F32 only)

    std::vector<std::string> (*preset_names)() = nullptr;
    ModelConfig (*preset)(std::string const& name) = nullptr;  // one of preset_names()
    // The model as index.json's "model" object holds it, and back (checked: errors name the field).
    nlohmann::json (*index_json)(ModelConfig const& model) = nullptr;
    ModelConfig (*from_index_json)(nlohmann::json const& model) = nullptr;
    // A Hugging Face folder of this family: its config.json (a setting axonn cannot reproduce is refused by name),
    // this rank's shards of its weights into `params` laid out by `layout`, and a checkpoint written as one.
    ModelConfig (*read_hf_config)(std::filesystem::path const& dir) = nullptr;
    void (*read_hf_weights)(std::filesystem::path const& dir, ModelConfig const& model, ShardLayout const& layout,
                            std::span<float> params) = nullptr;
    // Refuses weights whose names, shapes or types differ from what config.json asks for, from the files' headers.
    void (*check_hf_weights)(std::filesystem::path const& dir, ModelConfig const& model) = nullptr;
    void (*export_hf)(ModelConfig const& model, ReadTensor const& read_tensor, std::filesystem::path const& out,
                      DType dtype) = nullptr;
};

// Every family, in the order --help lists them; the first is the family of an index.json that names none and the
// reader of a Hugging Face folder of no family axonn knows (its errors say what is wrong).
std::span<ModelFamily const* const> model_families();
// The family of that name, or an axonn::Error naming the ones there are.
ModelFamily const& model_family(std::string_view name);
ModelFamily const& family_of(ModelConfig const& model);
// The preset of any family by its name (gpt2-small, gpt-20b, llama-tiny, llama3.1-8b, ...); an unknown name is an
// axonn::Error that lists them all.
ModelConfig model_preset(std::string const& name);
// "gpt2 and llama", "GPT-2 (gpt2) and Llama (llama)", "GPT-2 or Llama": the families in a message.
std::string family_names();
std::string hf_model_types();
std::string family_labels();

}  // namespace axonn
