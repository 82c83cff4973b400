#include "axonn/io/pretokenize.h"

#include "axonn/io/utf8.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace axonn {
namespace {

struct CodePointRange {
    char32_t first;
    char32_t last;
};

#include "axonn/io/unicode_tables.inc"

template <std::size_t count>
bool in_ranges(std::array<CodePointRange, count> const& ranges, char32_t c) {
    auto const before = [](char32_t value, CodePointRange const& range) { return value < range.first; };
    auto const after = std::upper_bound(ranges.begin(), ranges.end(), c, before);
    return after != ranges.begin() && c <= std::prev(after)->last;
}

bool is_unicode_space(char32_t c) {
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace

// ASCII is answered without the tables, since it is most of most texts (\s is \t \n \v \f \r and space, not
// \x1c-\x1f).
CharClass classify(char32_t c) {
    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::letter;
        if (c >= '0' && c <= '9') return CharClass::number;
        if (c == ' ' || (c >= '\t' && c <= '\r')) return CharClass::space;
        return CharClass::other;
    }
    if (c == invalid_code_point) return CharClass::other;
    if (is_unicode_space(c)) return CharClass::space;
    if (in_ranges(letter_ranges, c)) return CharClass::letter;
    return in_ranges(number_ranges, c) ? CharClass::number : CharClass::other;
}

CharClass class_at(std::string_view text, std::size_t position) { return classify(decode_at(text, position).value); }

std::size_t run_end(std::string_view text, std::size_t position, CharClass kind, std::size_t max_count) {
    for (std::size_t count = 0; count < max_count && position < text.size(); ++count) {
        CodePoint const code_point = decode_at(text, position);
        if (classify(code_point.value) != kind) break;
        position += code_point.length;
    }
    return position;
}

std::size_t contraction_end(std::string_view text, std::size_t begin, LetterCase letter_case) {
    if (text[begin] != '\'') return 0;
    std::string_view const rest = text.substr(begin + 1);
    auto const starts_with = [&](std::string_view suffix) {
        if (rest.size() < suffix.size()) return false;
        for (std::size_t k = 0; k < suffix.size(); ++k) {
            char const c = letter_case == LetterCase::ignored
                               ? static_cast<char>(std::tolower(static_cast<unsigned char>(rest[k])))
                               : rest[k];
            if (c != suffix[k]) return false;
        }
        return true;
    };
    for (std::string_view suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
        if (starts_with(suffix)) return begin + 1 + suffix.size();
    }
    return 0;
}

std::size_t whitespace_end(std::string_view text, std::size_t begin) {
    std::size_t position = begin;
    std::size_t last_start = begin;
    while (position < text.size()) {
        CodePoint const code_point = decode_at(text, position);
        if (classify(code_point.value) != CharClass::space) break;
        last_start = position;
        position += code_point.length;
    }
    return position == text.size() || last_start == begin ? position : last_start;
}

}  // namespace axonn
