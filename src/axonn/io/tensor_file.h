// A file of named tensors: the format in which the model's weights, a batch and reference results travel
// between this program and the PyTorch oracle (tests/reference/), and the base of checkpoints.
//
// Layout (little-endian):
//   "AXONNTNS"            8 bytes magic
//   u32 version           = 1
//   u32 count             number of tensors
//   count times:
//     u32 name_length, name bytes (UTF-8, no terminator)
//     u32 dtype           0 = f32, 1 = f64, 3 = i32 (axonn::DType)
//     u32 ndim, i64 dims[ndim]
//     raw element data, row-major
#pragma once

#include "axonn/core/tensor.h"

#include <filesystem>
#include <map>
#include <string>

namespace axonn {

using NamedTensors = std::map<std::string, Tensor>;

void write_tensor_file(std::filesystem::path const& path, NamedTensors const& tensors);
NamedTensors read_tensor_file(std::filesystem::path const& path);

}  // namespace axonn
