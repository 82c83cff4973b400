// index.json, the table of contents of a checkpoint directory (docs/ARCHITECTURE.md, "Formats"):
//
//   {"format": "axonn-checkpoint", "version": 1, "step": 300,
//    "model": {"name", "vocab_size", "padded_vocab_size", "n_layer", "n_head", "n_embd", "max_seq"}   GPT-2
//           | {"family": "llama", "name", "padded_vocab_size", "config": {Hugging Face's config.json}},
//    "grid": {"data", "z", "y", "x"},                  the grid that wrote it (any grid reads it)
//    "run": {...} | null,                              the trainer's state (schedule, optimizer, data position,
//                                                      seed); null for weights alone (an imported model)
//    "tensors": {NAME: {"shape": [..], "dtype": "F32",
//                       "parts": [{"file", "name", "begin", "count"}, ...]}},
//    "files": {FILE: {"bytes": n, "crc32": c}}}
//
// Every tensor is stored in its serial layout (the unsharded model's, padding rows included), flattened and cut
// into parts: part [begin, begin + count) of the flat tensor is tensor "name" (1-D, [count]) in safetensors file
// "file". The parts of a tensor tile it exactly. Weights are named as the model's parameters ("wte", "qkvw", ...),
// AdamW's moments "exp_avg.NAME" and "exp_avg_sq.NAME".
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/model/model_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// index.json's "format": what tells a checkpoint's index from any other JSON file.
inline constexpr char const* checkpoint_index_format = "axonn-checkpoint";

struct TensorPart {
    std::string file;
    std::string name;       // the 1-D tensor in that file
    std::int64_t begin = 0;  // first element of the flattened serial tensor
    std::int64_t count = 0;
};

struct StoredTensor {
    Shape shape;
    std::vector<TensorPart> parts;  // ordered by begin, tiling [0, numel)
};

struct StoredFile {
    std::uint64_t bytes = 0;
    std::uint32_t crc32 = 0;
};

struct CheckpointIndex {
    std::int64_t step = 0;
    ModelConfig model;
    GridShape grid;
    nlohmann::json run;  // null: weights only
    std::map<std::string, StoredTensor> tensors;
    std::map<std::string, StoredFile> files;
};

inline constexpr int checkpoint_format_version = 1;

// The moments' names for parameter `name`.
std::string exp_avg_name(std::string_view name);
std::string exp_avg_sq_name(std::string_view name);

std::string checkpoint_index_json(CheckpointIndex const& index);
// Parses and checks an index: known format and version, a valid model, parts that tile every tensor, file names
// that stay inside the directory, and every file referenced listed. Throws axonn::Error with the first problem.
CheckpointIndex parse_checkpoint_index(std::string_view text);

}  // namespace axonn
