// Whole files as tests read and write them: byte for byte, no newline translation.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace axonn::testing {

// The file's bytes ("" for a file that cannot be read).
inline std::string file_bytes(std::filesystem::path const& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `bytes` as the whole of the file, and returns its path.
inline std::filesystem::path write_file(std::filesystem::path const& path, std::string const& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
}

// Where scripts/fetch-corpus extracts the Jane Austen corpus package.
inline std::filesystem::path corpus_root() {
    return std::filesystem::path(AXONN_SOURCE_DIR) / "data" / "corpus" / "janeaustenr";
}

}  // namespace axonn::testing
