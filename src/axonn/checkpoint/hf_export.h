// A checkpoint's weights written as a Hugging Face folder of its model's family (`axonn export --format hf`).
#pragma once

#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/core/tensor.h"

#include <filesystem>

namespace axonn {

// config.json and model.safetensors into `out` (created if missing), with transformers' names and layout, the
// weights in `dtype` where the family writes BF16 (families/registry.h: exports_bf16), else F32.
void export_hf(CheckpointReader& checkpoint, std::filesystem::path const& out, DType dtype = DType::f32);

}  // namespace axonn
