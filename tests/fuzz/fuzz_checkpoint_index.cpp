// Fuzzes axonn::parse_checkpoint_index (src/axonn/checkpoint/checkpoint_index.cpp), the check of a checkpoint's
// index.json, and through it each family's reading of its model (src/axonn/families/: GPT-2's fields, Llama's
// Hugging Face config.json) and validate().
//
// Input: the text of an index.json.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report (ASan, UBSan), any
// other exception escaping (nlohmann::json's, std::, InternalError), or an index accepted that does not survive
// a round trip: checkpoint_index_json() of the parsed index must be accepted again and give the same index.
#include "axonn/checkpoint/checkpoint_index.h"
#include "axonn/core/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(bool condition, char const* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_checkpoint_index: accepted index breaks: %s\n", what);
        std::abort();
    }
}

bool same(axonn::CheckpointIndex const& a, axonn::CheckpointIndex const& b) {
    auto const same_model = a.model.family() == b.model.family() && a.model.name() == b.model.name() &&
                            axonn::model_differences(a.model, b.model).empty();
    if (!same_model || a.step != b.step || !(a.grid == b.grid) || a.run != b.run) return false;
    if (a.files.size() != b.files.size() || a.tensors.size() != b.tensors.size()) return false;
    for (auto const& [name, file] : a.files) {
        auto const other = b.files.find(name);
        if (other == b.files.end() || other->second.bytes != file.bytes || other->second.crc32 != file.crc32) {
            return false;
        }
    }
    for (auto const& [name, tensor] : a.tensors) {
        auto const other = b.tensors.find(name);
        if (other == b.tensors.end() || other->second.shape != tensor.shape ||
            other->second.parts.size() != tensor.parts.size()) {
            return false;
        }
        for (std::size_t i = 0; i < tensor.parts.size(); ++i) {
            auto const& p = tensor.parts[i];
            auto const& q = other->second.parts[i];
            if (p.file != q.file || p.name != q.name || p.begin != q.begin || p.count != q.count) return false;
        }
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::string_view const text(reinterpret_cast<char const*>(data), size);
    axonn::CheckpointIndex index;
    try {
        index = axonn::parse_checkpoint_index(text);
    } catch (axonn::Error const&) {
        return 0;  // a refused index: the expected outcome for most inputs
    }
    std::string const written = axonn::checkpoint_index_json(index);
    try {
        check(same(index, axonn::parse_checkpoint_index(written)), "the index written back parses to the same index");
    } catch (axonn::Error const& e) {
        std::fprintf(stderr, "fuzz_checkpoint_index: the index written back is refused: %s\n", e.what());
        std::abort();
    }
    return 0;
}
