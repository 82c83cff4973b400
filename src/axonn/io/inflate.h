// Inflating a zlib or gzip stream whole, bounded: the input may be crafted (a "zip bomb"), so the output stops at a
// limit instead of filling the memory, and a damaged stream is an error that names the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace axonn {

// Inflates `compressed` (a zlib or gzip stream): to exactly expected_bytes when the caller knows how many, else
// to at most max_bytes. A damaged or cut stream, or one that inflates past its bound, is an axonn::Error
// "FILE is corrupt (DETAIL): HINT".
std::string inflate_bounded(std::string_view compressed, std::size_t expected_bytes, std::size_t max_bytes,
                            std::filesystem::path const& file, std::string_view hint);

}  // namespace axonn
