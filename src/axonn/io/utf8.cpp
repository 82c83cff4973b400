#include "axonn/io/utf8.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <array>

namespace axonn {

CodePoint decode_at(std::string_view text, std::size_t position) {
    auto const lead = static_cast<unsigned char>(text[position]);
    if (lead < 0x80) return {lead, 1};
    std::size_t const length = (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || position + length > text.size()) return {invalid_code_point, 1};
    char32_t value = lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        auto const next = static_cast<unsigned char>(text[position + k]);
        if ((next & 0xC0) != 0x80) return {invalid_code_point, 1};
        value = (value << 6) | (next & 0x3F);
    }
    constexpr std::array<char32_t, 5> smallest = {0, 0, 0x80, 0x800, 0x10000};  // shorter encodings are overlong
    bool const well_formed = value >= smallest[length] && value <= 0x10FFFF && (value < 0xD800 || value > 0xDFFF);
    return well_formed ? CodePoint{value, length} : CodePoint{invalid_code_point, 1};
}

std::optional<std::size_t> first_non_text_byte(std::string_view text) {
    for (std::size_t position = 0; position < text.size();) {
        CodePoint const code_point = decode_at(text, position);
        if (code_point.value == invalid_code_point || code_point.value == 0) return position;
        position += code_point.length;
    }
    return std::nullopt;
}

void require_utf8_text(std::string_view text, std::string_view what, std::string_view fix) {
    if (auto const offset = first_non_text_byte(text)) {
        fail("{} is not UTF-8 text (byte 0x{:02X} at offset {}): {}", what, static_cast<unsigned char>(text[*offset]),
             *offset, fix);
    }
}

std::string quoted_text(std::string_view text) {
    std::string quoted = "\"";
    for (std::size_t position = 0; position < text.size();) {
        CodePoint const code_point = decode_at(text, position);
        auto const byte = static_cast<unsigned char>(text[position]);
        if (code_point.value == invalid_code_point || byte < 0x20 || byte == 0x7F) {
            quoted += fmt::format("\\x{:02X}", byte);
            position += 1;
            continue;
        }
        if (code_point.value >= 0x80 && code_point.value <= 0x9F) {  // C1 controls: a terminal may obey them
            quoted += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(code_point.value));
            position += code_point.length;
            continue;
        }
        if (byte == '"' || byte == '\\') quoted += '\\';
        quoted.append(text.substr(position, code_point.length));
        position += code_point.length;
    }
    return quoted + '"';
}

}  // namespace axonn
