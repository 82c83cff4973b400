// Fuzzes axonn::parse_safetensors_header (src/axonn/io/safetensors.cpp), the check of a safetensors file's JSON
// header against the size of its data section.
//
// Input: the first 8 bytes are data_bytes (the data section's size, a little-endian u64, any value); the rest is
// the header's JSON text. Shorter inputs are skipped.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report (ASan, UBSan), any
// other exception escaping (nlohmann::json's, std::, InternalError), or a header accepted although it breaks what
// the parser promises: every tensor inside the data and as long as its dtype and shape say, tensors sorted by
// offset and not overlapping (empty tensors aside).
#include "axonn/core/error.h"
#include "axonn/io/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

void check(bool condition, char const* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_safetensors_header: accepted header breaks: %s\n", what);
        std::abort();
    }
}

void check_accepted(axonn::SafetensorsHeader const& header, std::uint64_t data_bytes) {
    axonn::SafetensorsEntry const* before = nullptr;
    for (auto const& entry : header.tensors) {
        check(entry.begin <= entry.end && entry.end <= data_bytes, "a tensor lies inside the data");
        std::uint64_t bytes = axonn::dtype_size(entry.dtype);
        for (std::int64_t extent : entry.shape) {
            check(extent >= 0, "sizes are non-negative");
            check(!__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(extent), &bytes), "sizes do not overflow");
        }
        check(entry.end - entry.begin == bytes, "a tensor's bytes match its dtype and shape");
        check(header.find(entry.name) != nullptr, "find() finds every tensor");
        if (before != nullptr) {
            check(before->begin <= entry.begin, "tensors are sorted by offset");
            check(entry.begin >= before->end || before->begin == before->end || entry.begin == entry.end,
                  "tensors do not overlap");
        }
        before = &entry;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    if (size < 8) return 0;
    std::uint64_t data_bytes = 0;
    for (int i = 7; i >= 0; --i) data_bytes = data_bytes << 8 | data[i];
    std::string_view const json(reinterpret_cast<char const*>(data) + 8, size - 8);
    try {
        check_accepted(axonn::parse_safetensors_header(json, data_bytes), data_bytes);
    } catch (axonn::Error const&) {
        // A refused header: the expected outcome for most inputs.
    }
    return 0;
}
