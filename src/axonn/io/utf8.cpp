#include "axonn/io/utf8.h"

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

}  // namespace axonn
