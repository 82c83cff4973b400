#include "axonn/io/safetensors.h"

#include "axonn/core/error.h"
#include "axonn/core/guarded_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>

namespace axonn {
namespace {

using nlohmann::json;

struct DTypeName {
    DType dtype;
    char const* name;
};
constexpr std::array<DTypeName, 5> dtype_names = {{
    {DType::f32, "F32"}, {DType::bf16, "BF16"}, {DType::f16, "F16"}, {DType::f64, "F64"}, {DType::i32, "I32"}}};

// A dtype the format has and axonn does not read: a sound file, which no "damaged" may be said of.
class UnreadDtype : public Error {
public:
    using Error::Error;
};

DType parse_dtype(std::string const& name, std::string const& tensor) {
    for (auto const& entry : dtype_names) {
        if (name == entry.name) return entry.dtype;
    }
    throw UnreadDtype(fmt::format("tensor '{}' has dtype {}, which axonn does not read: convert the weights to "
                                  "F32, BF16 or F16", tensor, name));
}

// JSON nested deeper than this is no header (a header is 3 levels deep).
constexpr int max_header_json_depth = 8;

std::uint64_t checked_unsigned(json const& value, std::string const& what) {
    AXONN_REQUIRE(value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() >= 0),
                  "{} must be a non-negative integer", what);
    return value.get<std::uint64_t>();
}

SafetensorsEntry parse_entry(std::string const& name, json const& description, std::uint64_t data_bytes) {
    AXONN_REQUIRE(description.is_object(), "tensor '{}' is not described by an object", name);
    for (char const* key : {"dtype", "shape", "data_offsets"}) {
        AXONN_REQUIRE(description.contains(key), "tensor '{}' has no \"{}\"", name, key);
    }
    json const& dtype = description["dtype"];
    AXONN_REQUIRE(dtype.is_string(), "tensor '{}': dtype is not a string", name);
    SafetensorsEntry entry{name, parse_dtype(dtype.get<std::string>(), name), {}, 0, 0};
    json const& shape = description["shape"];
    AXONN_REQUIRE(shape.is_array() && shape.size() <= 8, "tensor '{}': shape must be an array of at most 8 sizes",
                  name);
    std::uint64_t bytes = dtype_size(entry.dtype);
    for (json const& extent : shape) {
        std::uint64_t const size = checked_unsigned(extent, fmt::format("tensor '{}': every size of its shape", name));
        AXONN_REQUIRE(size < (std::uint64_t{1} << 48) && !__builtin_mul_overflow(bytes, size, &bytes),
                      "tensor '{}' has an absurd shape {}", name, shape.dump());
        entry.shape.push_back(static_cast<std::int64_t>(size));
    }
    json const& offsets = description["data_offsets"];
    AXONN_REQUIRE(offsets.is_array() && offsets.size() == 2, "tensor '{}': data_offsets must be [begin, end]", name);
    entry.begin = checked_unsigned(offsets[0], fmt::format("tensor '{}': data_offsets", name));
    entry.end = checked_unsigned(offsets[1], fmt::format("tensor '{}': data_offsets", name));
    AXONN_REQUIRE(entry.begin <= entry.end && entry.end <= data_bytes,
                  "tensor '{}' points at bytes [{}, {}) outside the {} bytes of data", name, entry.begin, entry.end,
                  data_bytes);
    AXONN_REQUIRE(entry.end - entry.begin == bytes, "tensor '{}' of shape {} and dtype {} needs {} bytes but has {}",
                  name, shape.dump(), dtype.get<std::string>(), bytes, entry.end - entry.begin);
    return entry;
}

}  // namespace

SafetensorsEntry const* SafetensorsHeader::find(std::string_view name) const {
    auto const found = std::find_if(tensors.begin(), tensors.end(), [&](auto const& e) { return e.name == name; });
    return found == tensors.end() ? nullptr : &*found;
}

std::string safetensors_dtype_name(DType dtype) {
    for (auto const& entry : dtype_names) {
        if (entry.dtype == dtype) return entry.name;
    }
    throw InternalError(fmt::format("no safetensors name for dtype {}", dtype_name(dtype)));
}

SafetensorsHeader parse_safetensors_header(std::string_view text, std::uint64_t data_bytes) {
    json const header = parse_guarded_json(text, max_header_json_depth);
    AXONN_REQUIRE(header.is_object(), "the header is not a JSON object");
    SafetensorsHeader parsed;
    for (auto const& [name, description] : header.items()) {
        if (name == "__metadata__") {
            AXONN_REQUIRE(description.is_object(), "__metadata__ is not an object");
            for (auto const& [key, value] : description.items()) {
                AXONN_REQUIRE(value.is_string(), "__metadata__ entry '{}' is not a string", key);
                parsed.metadata[key] = value.get<std::string>();
            }
            continue;
        }
        parsed.tensors.push_back(parse_entry(name, description, data_bytes));
    }
    std::sort(parsed.tensors.begin(), parsed.tensors.end(),
              [](auto const& a, auto const& b) { return a.begin < b.begin || (a.begin == b.begin && a.end < b.end); });
    // Sorted by start, each tensor with bytes must start where the earlier ones end (empty ones hold none): the
    // format's data has no holes and nothing after its last tensor, so that a file's bytes are its tensors alone.
    SafetensorsEntry const* furthest = nullptr;
    std::uint64_t covered = 0;  // the data's bytes [0, covered) are the tensors'
    for (auto const& entry : parsed.tensors) {
        if (entry.begin == entry.end) continue;
        AXONN_REQUIRE(furthest == nullptr || entry.begin >= furthest->end, "tensors '{}' and '{}' overlap in the data",
                      furthest == nullptr ? "" : furthest->name, entry.name);
        AXONN_REQUIRE(entry.begin == covered, "the data's bytes [{}, {}) before tensor '{}' belong to no tensor",
                      covered, entry.begin, entry.name);
        covered = entry.end;
        furthest = &entry;
    }
    AXONN_REQUIRE(covered == data_bytes, "the data's last {} bytes (from byte {}) belong to no tensor",
                  data_bytes - covered, covered);
    return parsed;
}

SafetensorsHeader read_safetensors_header(InputFile const& file, std::string_view what) {
    auto const size = static_cast<std::uint64_t>(file.info.st_size);
    std::string const name = file.path.string();
    AXONN_REQUIRE(size >= 8, "{} {} is truncated ({} bytes, no header): it is damaged; use another copy", what, name,
                  size);
    unsigned char length_bytes[8];
    read_exactly(file, 0, length_bytes, 8, what);
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = length << 8 | length_bytes[i];
    AXONN_REQUIRE(length <= safetensors_max_header_bytes && length <= size - 8,
                  "{} {} has a header of {} bytes in a file of {}: it is truncated or not a safetensors file", what,
                  name, length, size);
    std::string text(length, '\0');
    read_exactly(file, 8, text.data(), length, what);
    try {
        SafetensorsHeader header = parse_safetensors_header(text, size - 8 - length);
        header.data_start = 8 + length;
        return header;
    } catch (UnreadDtype const& e) {
        fail("{} {}: {}", what, name, e.what());
    } catch (Error const& e) {
        fail("{} {}: its header (the JSON from byte 8): {}: it is damaged or not a safetensors file", what, name,
             e.what());
    }
}

std::string safetensors_header_bytes(std::vector<SafetensorsEntry>& tensors,
                                     std::map<std::string, std::string> const& metadata) {
    // An ordered object would sort the names; the data order is the list's, so offsets are set first.
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (auto& entry : tensors) {
        entry.begin = offset;
        entry.end = offset + static_cast<std::uint64_t>(shape_numel(entry.shape)) * dtype_size(entry.dtype);
        offset = entry.end;
        header[entry.name] = {{"dtype", safetensors_dtype_name(entry.dtype)},
                              {"shape", entry.shape},
                              {"data_offsets", {entry.begin, entry.end}}};
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(text.size() >> (8 * i) & 0xff);
    return bytes + text;
}

}  // namespace axonn
