// Safetensors, the public format in which checkpoints and Hugging Face models keep their tensors:
//
//   u64 N                 little-endian length of the header
//   N bytes               a JSON object: for every tensor, name -> {"dtype": "F32", "shape": [..],
//                         "data_offsets": [begin, end]} (byte offsets into the data that follows), and an
//                         optional "__metadata__": {string: string}; padded with spaces to a multiple of 8 bytes
//   data                  raw little-endian elements, row-major
//
// The reader trusts nothing in a file: the header's length, its JSON, every dtype, shape and offset are checked
// (a shape whose size overflows, offsets outside the file or overlapping another tensor's, JSON nested deeper than
// a header ever is), and every problem is one axonn::Error that says what is wrong.
#pragma once

#include "axonn/core/file_io.h"
#include "axonn/core/tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// The largest header this reader accepts (the reference implementation's limit).
inline constexpr std::uint64_t safetensors_max_header_bytes = 100'000'000;

struct SafetensorsEntry {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;
    std::uint64_t begin = 0;  // byte offsets into the data section
    std::uint64_t end = 0;
};

struct SafetensorsHeader {
    std::vector<SafetensorsEntry> tensors;  // in the order of their data
    std::map<std::string, std::string> metadata;
    std::uint64_t data_start = 0;           // file offset of the data section: 8 + N

    SafetensorsEntry const* find(std::string_view name) const;
};

// "F32", "BF16", "F64", "I32" for the dtypes a file may hold here.
std::string safetensors_dtype_name(DType dtype);

// Parses the JSON header of a file whose data section holds `data_bytes` bytes. Throws axonn::Error naming the
// first problem (without the file's name: the caller adds it).
SafetensorsHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes);

// Reads and checks the header of an open file; errors name `what` and the file.
SafetensorsHeader read_safetensors_header(InputFile const& file, std::string_view what);

// The bytes that start a file holding `tensors` in this order, back to back from data offset 0: the length, the
// JSON and its padding. Each entry's begin and end are set here from its dtype and shape.
std::string safetensors_header_bytes(std::vector<SafetensorsEntry>& tensors,
                                     std::map<std::string, std::string> const& metadata = {});

}  // namespace axonn
