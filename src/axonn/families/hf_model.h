// A Hugging Face model folder of any family axonn knows (told apart by config.json's model_type): its model and
// its weights onto any grid.
#pragma once

#include "axonn/io/hf_safetensors.h"  // is_hf_model_folder, which callers of these ask first
#include "axonn/model/model_config.h"
#include "axonn/parallel/shard_layout.h"

#include <filesystem>
#include <span>

namespace axonn {

// The model dir/config.json describes, named after the folder. Errors name the field that axonn cannot reproduce.
ModelConfig read_hf_model_config(std::filesystem::path const& dir);

// This rank's shards of every parameter of `model`, read from dir's weights into the flat buffer `params` laid out
// by `layout`. Every tensor is checked (present, F32, BF16 or F16, of the config's shape) before any is read.
void read_hf_weights(std::filesystem::path const& dir, ModelConfig const& model, ShardLayout const& layout,
                     std::span<float> params);

}  // namespace axonn
