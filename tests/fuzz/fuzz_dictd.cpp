// Fuzzes the dictd reader of the memorization study's real text, axonn::read_devils_dictionary
// (src/axonn/memorization/real_text.cpp): the index's base-64 offsets and lengths, and the gzip dictionary.
//
// Input: the index's bytes, a 0 byte, then the dictionary's bytes (compressed, as devil.dict.dz holds them; an
// input without a 0 byte is an index with an empty dictionary). A failure is anything but a clean result or an
// axonn::Error: a crash, a sanitizer report (an entry read past the dictionary among them), or another exception.
#include "axonn/core/error.h"
#include "axonn/memorization/real_text.h"
#include "fuzz_files.h"

#include <algorithm>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::filesystem::path const& folder = fuzz::work_folder("dictd");
    std::uint8_t const* split = std::find(data, data + size, std::uint8_t{0});
    std::size_t const index_bytes = static_cast<std::size_t>(split - data);
    fuzz::write_file(folder / "devil.index", data, index_bytes);
    std::size_t const rest = index_bytes < size ? index_bytes + 1 : size;
    fuzz::write_file(folder / "devil.dict.dz", data + rest, size - rest);
    try {
        axonn::read_devils_dictionary(folder);
    } catch (axonn::Error const&) {
        // A one-line refusal: what hostile input should get.
    }
    return 0;
}
