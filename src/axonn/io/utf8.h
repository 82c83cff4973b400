// UTF-8 decoding, one code point at a time: what the GPT-2 tokenizer splits text by and what `axonn prepare`
// checks its inputs with.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace axonn {

struct CodePoint {
    char32_t value;
    std::size_t length;  // in bytes
};

inline constexpr char32_t invalid_code_point = 0x110000;

// The code point at text[position]. A byte that does not start a well-formed sequence (overlong forms,
// surrogates and values past U+10FFFF included) stands alone as an invalid code point, so arbitrary bytes can
// still be walked through.
CodePoint decode_at(std::string_view text, std::size_t position);

// The offset of the first byte that is not part of well-formed UTF-8 text, or of the first NUL byte; none for text.
std::optional<std::size_t> first_non_text_byte(std::string_view text);

}  // namespace axonn
