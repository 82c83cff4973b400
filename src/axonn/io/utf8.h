// UTF-8 decoding, one code point at a time: what the GPT-2 tokenizer splits text by and what `axonn prepare`
// checks its inputs with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace axonn {

struct CodePoint {
    char32_t value;
    std::size_t length;  // in bytes
};

inline constexpr char32_t invalid_code_point = 0x110000;
// U+FEFF at the start of a file, which some editors write.
inline constexpr std::string_view utf8_byte_order_mark = "\xEF\xBB\xBF";

// Drops a byte-order mark that starts `text`: a mark of the file's encoding, not a character of its text (a
// document prepared with it trained on three bytes no other document starts with).
inline void drop_byte_order_mark(std::string& text) {
    if (text.starts_with(utf8_byte_order_mark)) text.erase(0, utf8_byte_order_mark.size());
}

// The code point at text[position]. A byte that does not start a well-formed sequence (overlong forms,
// surrogates and values past U+10FFFF included) stands alone as an invalid code point, so arbitrary bytes can
// still be walked through.
CodePoint decode_at(std::string_view text, std::size_t position);

// The offset of the first byte that is not part of well-formed UTF-8 text, or of the first NUL byte; none for text.
std::optional<std::size_t> first_non_text_byte(std::string_view text);

// Refuses what is not text: "<what> is not UTF-8 text (byte 0xFF at offset 2): <fix>".
void require_utf8_text(std::string_view text, std::string_view what, std::string_view fix);

// Text read from a file, for a one-line message: in double quotes, with quotes, backslashes, control characters
// and bytes that are not UTF-8 escaped (a NUL cut messages short; a line end split them; an escape sequence reached
// the terminal).
std::string quoted_text(std::string_view text);

}  // namespace axonn
