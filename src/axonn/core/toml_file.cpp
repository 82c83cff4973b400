#include "axonn/core/toml_file.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <fmt/format.h>

namespace axonn {
namespace {

constexpr std::uint64_t max_toml_bytes = 1 << 20;  // configurations and profiles are a few hundred bytes

std::string location_text(toml::source_region const& region, std::filesystem::path const& path) {
    return fmt::format("{}:{}:{}", path.string(), region.begin.line, region.begin.column);
}

// The characters of a number written at `where` (1-based line and column, the column in code points) of `text`.
std::string_view number_text(std::string_view text, toml::source_position where) {
    std::size_t at = 0;
    for (toml::source_index line = 1; line < where.line && at != std::string_view::npos; ++line) {
        at = text.find('\n', at);
        if (at != std::string_view::npos) ++at;
    }
    for (toml::source_index column = 1; column < where.column && at < text.size(); ++column) {
        ++at;
        while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;  // UTF-8's rest
    }
    if (at >= text.size()) return {};
    std::size_t const end = text.find_first_not_of("0123456789+-._eE", at);
    return text.substr(at, end == std::string_view::npos ? end : end - at);
}

// toml++ reads a number too small for a double (1e-999) as 0 without a word: refused where it is written.
void require_no_underflow(toml::node const& node, std::string_view text, std::filesystem::path const& path) {
    if (toml::table const* table = node.as_table()) {
        for (auto const& [key, value] : *table) require_no_underflow(value, text, path);
    } else if (toml::array const* array = node.as_array()) {
        for (toml::node const& value : *array) require_no_underflow(value, text, path);
    } else if (node.is_floating_point() && *node.value<double>() == 0.0) {
        std::string_view const written = number_text(text, node.source().begin);
        std::string_view const digits = written.substr(0, written.find_first_of("eE"));
        AXONN_REQUIRE(digits.find_first_of("123456789") == std::string_view::npos,
                      "{}: {} is too small for a double (it would read as 0): write 0 if 0 is meant",
                      location_text(node.source(), path), written);
    }
}

}  // namespace

toml::table read_toml_file(std::filesystem::path const& path, std::string_view what, std::string_view hint) {
    std::string const text = read_input_file(path, what, hint, max_toml_bytes);
    toml::table table;
    try {
        table = toml::parse(text, path.string());
    } catch (toml::parse_error const& error) {
        toml::source_position const where = error.source().begin;
        fail("{}:{}:{}: {} is not valid TOML: {}", path.string(), where.line, where.column, what,
             error.description());
    }
    require_no_underflow(table, text, path);
    return table;
}

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
