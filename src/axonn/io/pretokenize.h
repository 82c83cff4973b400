// What byte-level BPE tokenizers cut text into pieces by, before merging: the character classes of their
// pre-tokenisation patterns (\p{L}, \p{N}, \s) and the alternatives those patterns share, for matching the
// patterns by hand over UTF-8 code points: no regex library is needed and none is fast enough.
#pragma once

#include <cstddef>
#include <string_view>

namespace axonn {

enum class CharClass { letter, number, space, other };

// Letters and numbers are Unicode's general categories L and N; space is the White_Space property, what \s
// matches in Python's `regex` module (GPT-2) and in Oniguruma (Hugging Face tokenizers). An invalid code point
// (a byte that is not UTF-8) is other.
CharClass classify(char32_t c);

// The class of the code point at text[position].
CharClass class_at(std::string_view text, std::size_t position);

// The end of the run of `kind` characters from `position`, after at most max_count of them.
std::size_t run_end(std::string_view text, std::size_t position, CharClass kind,
                    std::size_t max_count = std::string_view::npos);

enum class LetterCase { exact, ignored };

// 's|'t|'re|'ve|'m|'ll|'d, the English contractions, with or without case; 0 when none starts at `begin`.
std::size_t contraction_end(std::string_view text, std::size_t begin, LetterCase letter_case);

// \s+(?!\S)|\s+ from a whitespace character at `begin`: a whitespace run that ends the text is one piece;
// otherwise its last character is left to start the next piece (so "  word" splits as " ", " word"), unless it
// is the run's only character.
std::size_t whitespace_end(std::string_view text, std::size_t begin);

}  // namespace axonn
