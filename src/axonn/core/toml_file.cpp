#include "axonn/core/toml_file.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <fmt/format.h>

namespace axonn {
namespace {

constexpr std::uint64_t max_toml_bytes = 1 << 20;  // configurations and profiles are a few hundred bytes

}  // namespace

toml::table read_toml_file(std::filesystem::path const& path, std::string_view what, std::string_view hint) {
    std::string const text = read_input_file(path, what, hint, max_toml_bytes);
    try {
        return toml::parse(text, path.string());
    } catch (toml::parse_error const& error) {
        toml::source_position const where = error.source().begin;
        fail("{}:{}:{}: {} is not valid TOML: {}", path.string(), where.line, where.column, what,
             error.description());
    }
}

namespace {

std::string location_text(toml::source_region const& region, std::filesystem::path const& path) {
    return fmt::format("{}:{}:{}", path.string(), region.begin.line, region.begin.column);
}

}  // namespace

std::string toml_location(toml::node const& node, std::filesystem::path const& path) {
    return location_text(node.source(), path);
}

std::string toml_location(toml::key const& key, std::filesystem::path const& path) {
    return location_text(key.source(), path);
}

std::string toml_type_name(toml::node const& node) {
    switch (node.type()) {
        case toml::node_type::table: return "a table";
        case toml::node_type::array: return "an array";
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a number";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::date:
        case toml::node_type::time:
        case toml::node_type::date_time: return "a date or time";
        case toml::node_type::none: break;
    }
    return "nothing";
}

std::string toml_quoted(std::string_view text) {
    std::string quoted = "\"";
    for (char c : text) {
        switch (c) {
            case '"': quoted += "\\\""; break;
            case '\\': quoted += "\\\\"; break;
            case '\n': quoted += "\\n"; break;
            case '\t': quoted += "\\t"; break;
            case '\r': quoted += "\\r"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
                    quoted += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
                } else {
                    quoted += c;
                }
        }
    }
    return quoted + "\"";
}

}  // namespace axonn
