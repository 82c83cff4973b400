#include "axonn/checkpoint/checkpoint_index.h"

#include "axonn/core/error.h"
#include "axonn/core/guarded_json.h"
#include "axonn/core/json_fields.h"
#include "axonn/families/registry.h"

#include <fmt/format.h>

#include <limits>

namespace axonn {
namespace {

using nlohmann::json;

// A file name the index may point at: a plain name inside the checkpoint directory.
void check_file_name(std::string const& name) {
    bool const plain = !name.empty() && name.size() <= 255 && name.find('/') == std::string::npos &&
                       name.find('\\') == std::string::npos && name.find('\0') == std::string::npos &&
                       name != "." && name != "..";
    AXONN_REQUIRE(plain, "file name '{}' is not a plain name inside the checkpoint directory", name);
}

constexpr std::int64_t max_numel = std::int64_t{1} << 48;
constexpr int max_dimension = std::numeric_limits<int>::max();

// A model without "family" is GPT-2's (the indexes written before Llama): the first family registered.
ModelConfig parse_model(json const& model) {
    ModelFamily const& family = model.is_object() && model.contains("family")
                                    ? model_family(json_text(model, "family", "model"))
                                    : *model_families().front();
    ModelConfig const config = family.from_index_json(model);
    config.validate();
    AXONN_REQUIRE(json_integer(model, "padded_vocab_size", "model", 1, max_dimension) == config.padded_vocab_size(),
                  "model: padded_vocab_size is not vocab_size rounded up to a multiple of 64");
    return config;
}

StoredTensor parse_tensor(std::string const& name, json const& description,
                          std::map<std::string, StoredFile> const& files) {
    std::string const where = fmt::format("tensor '{}'", name);
    AXONN_REQUIRE(json_text(description, "dtype", where) == "F32", "{} is not F32", where);
    json const& shape = json_field(description, "shape", where);
    AXONN_REQUIRE(shape.is_array() && shape.size() <= 8, "{}: shape must be an array of at most 8 sizes", where);
    StoredTensor tensor;
    std::int64_t numel = 1;
    for (json const& extent : shape) {
        AXONN_REQUIRE(
            extent.is_number_integer() && extent.get<std::int64_t>() >= 0 && extent.get<std::int64_t>() <= max_numel,
            "{} has an absurd shape {}", where, shape.dump());
        tensor.shape.push_back(extent.get<std::int64_t>());
        AXONN_REQUIRE(!__builtin_mul_overflow(numel, tensor.shape.back(), &numel) && numel <= max_numel,
                      "{} has an absurd shape {}", where, shape.dump());
    }
    json const& parts = json_field(description, "parts", where);
    AXONN_REQUIRE(parts.is_array(), "{}: parts is not an array", where);
    std::int64_t next = 0;
    for (json const& part : parts) {
        TensorPart stored{json_text(part, "file", where), json_text(part, "name", where),
                          json_integer(part, "begin", where, 0, max_numel), json_integer(part, "count", where, 0, max_numel)};
        check_file_name(stored.file);
        AXONN_REQUIRE(files.contains(stored.file), "{}: its file {} is not in the index's file list", where,
                      stored.file);
        AXONN_REQUIRE(stored.begin == next, "{}: its parts do not tile it (a part starts at {}, expected {})", where,
                      stored.begin, next);
        next += stored.count;
        tensor.parts.push_back(std::move(stored));
    }
    AXONN_REQUIRE(next == numel, "{}: its parts hold {} of its {} elements", where, next, numel);
    return tensor;
}

// An index is 5 levels deep (6 with a Llama config), its run state 3; deeper JSON is refused before it is parsed
// and copied.
constexpr int max_index_depth = 16;

CheckpointIndex parse_index_document(std::string_view source) {
    json const document = parse_guarded_json(source, max_index_depth);
    AXONN_REQUIRE(document.is_object(), "it is not a JSON object");
    AXONN_REQUIRE(document.contains("format") && document["format"] == checkpoint_index_format,
                  "it is not an axonn checkpoint index");
    AXONN_REQUIRE(document.contains("version") && document["version"] == checkpoint_format_version,
                  "it has format version {}, and this axonn reads version {}",
                  document.contains("version") ? document["version"].dump() : "(none)", checkpoint_format_version);
    CheckpointIndex index;
    index.step = json_integer(document, "step", "the index", 0, std::numeric_limits<int>::max());
    index.model = parse_model(json_field(document, "model", "the index"));
    json const& grid = json_field(document, "grid", "the index");
    constexpr int max_axis = 1 << 20;
    index.grid = {static_cast<int>(json_integer(grid, "data", "grid", 1, max_axis)),
                  static_cast<int>(json_integer(grid, "z", "grid", 1, max_axis)),
                  static_cast<int>(json_integer(grid, "y", "grid", 1, max_axis)),
                  static_cast<int>(json_integer(grid, "x", "grid", 1, max_axis))};
    index.run = json_field(document, "run", "the index");
    AXONN_REQUIRE(index.run.is_object() || index.run.is_null(), "the index's \"run\" is neither an object nor null");
    json const& files = json_field(document, "files", "the index");
    AXONN_REQUIRE(files.is_object(), "the index's \"files\" is not an object");
    for (auto const& [name, file] : files.items()) {
        check_file_name(name);
        auto const bytes = json_integer(file, "bytes", name, 0, std::numeric_limits<std::int64_t>::max());
        auto const crc = json_integer(file, "crc32", name, 0, std::numeric_limits<std::uint32_t>::max());
        index.files[name] = {static_cast<std::uint64_t>(bytes), static_cast<std::uint32_t>(crc)};
    }
    json const& tensors = json_field(document, "tensors", "the index");
    AXONN_REQUIRE(tensors.is_object(), "the index's \"tensors\" is not an object");
    for (auto const& [name, description] : tensors.items()) {
        index.tensors[name] = parse_tensor(name, description, index.files);
    }
    // The parts a file holds fit in its bytes: an index cannot claim more data than its files have.
    std::map<std::string, std::uint64_t> claimed;
    for (auto const& [name, tensor] : index.tensors) {
        for (auto const& part : tensor.parts) claimed[part.file] += static_cast<std::uint64_t>(part.count) * sizeof(float);
    }
    for (auto const& [file, bytes] : claimed) {
        AXONN_REQUIRE(bytes <= index.files.at(file).bytes,
                      "its parts in file {} need {} bytes, more than the file's {}", file, bytes,
                      index.files.at(file).bytes);
    }
    return index;
}

}  // namespace

std::string exp_avg_name(std::string_view name) { return fmt::format("exp_avg.{}", name); }
std::string exp_avg_sq_name(std::string_view name) { return fmt::format("exp_avg_sq.{}", name); }

std::string checkpoint_index_json(CheckpointIndex const& index) {
    json tensors = json::object();
    for (auto const& [name, tensor] : index.tensors) {
        json parts = json::array();
        for (auto const& part : tensor.parts) {
            parts.push_back({{"file", part.file}, {"name", part.name}, {"begin", part.begin}, {"count", part.count}});
        }
        tensors[name] = {{"shape", tensor.shape}, {"dtype", "F32"}, {"parts", parts}};
    }
    json files = json::object();
    for (auto const& [name, file] : index.files) files[name] = {{"bytes", file.bytes}, {"crc32", file.crc32}};
    json const document = {{"format", checkpoint_index_format},
                           {"version", checkpoint_format_version},
                           {"step", index.step},
                           {"model", family_of(index.model).index_json(index.model)},
                           {"grid", {{"data", index.grid.data}, {"z", index.grid.z}, {"y", index.grid.y},
                                     {"x", index.grid.x}}},
                           {"run", index.run},
                           {"tensors", tensors},
                           {"files", files}};
    return document.dump(1) + "\n";
}

CheckpointIndex parse_checkpoint_index(std::string_view source) {
    try {
        return parse_index_document(source);
    } catch (json::exception const& e) {
        fail("it does not have the shape of an index ({})", e.what());
    }
}

}  // namespace axonn
