// A safetensors file's tensors with their bytes, read and written whole: for tests that damage a model folder's
// weights (drop a tensor, rename one, add one) and write it back.
#pragma once

#include "axonn/core/file_io.h"
#include "axonn/io/safetensors.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace axonn::testing {

// One tensor, in file order, with its bytes.
struct StoredTensor {
    SafetensorsEntry entry;
    std::string bytes;
};

inline std::vector<StoredTensor> read_tensors(std::filesystem::path const& path) {
    InputFile const file = open_input_file(path, "weights", "");
    SafetensorsHeader const header = read_safetensors_header(file, "weights");
    std::vector<StoredTensor> tensors;
    for (SafetensorsEntry const& entry : header.tensors) {
        std::string bytes(entry.end - entry.begin, '\0');
        read_exactly(file, header.data_start + entry.begin, bytes.data(), bytes.size(), "weights");
        tensors.push_back({entry, std::move(bytes)});
    }
    return tensors;
}

inline void write_tensors(std::filesystem::path const& path, std::vector<StoredTensor> const& tensors) {
    std::vector<SafetensorsEntry> entries;
    for (StoredTensor const& tensor : tensors) entries.push_back(tensor.entry);
    std::ofstream out(path, std::ios::binary);
    out << safetensors_header_bytes(entries, {{"format", "pt"}});
    for (StoredTensor const& tensor : tensors) out << tensor.bytes;
}

}  // namespace axonn::testing
