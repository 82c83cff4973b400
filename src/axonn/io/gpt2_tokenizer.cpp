// OpenAI's GPT-2 tokenizer (byte-level BPE), reimplemented from openai/gpt-2 src/encoder.py:
//   1. split the text into pieces with GPT-2's pre-tokenisation pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      (matched by hand over UTF-8 code points: no regex library is needed and none is fast enough);
//   2. turn each piece into one symbol per byte and repeatedly merge the adjacent pair that vocab.bpe ranks first.
// The files spell bytes through GPT-2's bytes-to-unicode map (printable characters stand for themselves, the
// rest for code points from 256 up); they are converted to raw bytes once at load, so encoding and decoding
// work on bytes and token ids only.
#include "axonn/io/tokenizer.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/utf8.h"

#include <nlohmann/json.hpp>

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <array>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>

namespace axonn {
namespace {

constexpr std::string_view eot_text = "<|endoftext|>";

// ---- Reading the files ----------------------------------------------------------------------------------------------

std::string read_tokenizer_file(std::filesystem::path const& path) {
    return read_input_file(path, "GPT-2 tokenizer file", "run scripts/fetch-tokenizer (or set AXONN_GPT2_DIR to a "
                           "folder holding encoder.json and vocab.bpe)", std::uint64_t{64} << 20);
}

template <typename... Args>
[[noreturn]] void fail_corrupt(std::filesystem::path const& path, fmt::format_string<Args...> detail,
                               Args&&... args) {
    fail("GPT-2 tokenizer file {} is corrupt ({}): run scripts/fetch-tokenizer to fetch it again", path.string(),
         fmt::format(detail, std::forward<Args>(args)...));
}

// GPT-2's bytes_to_unicode(): the code point that stands for each byte in encoder.json and vocab.bpe.
std::array<char32_t, 256> make_byte_to_code_point() {
    auto const printable = [](int byte) {
        return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
    };
    std::array<char32_t, 256> code_points{};
    char32_t next_stand_in = 256;
    for (int byte = 0; byte < 256; ++byte) {
        code_points[byte] = printable(byte) ? static_cast<char32_t>(byte) : next_stand_in++;
    }
    return code_points;
}

// A token as spelled in the files -> the raw bytes it stands for; nullopt if a character stands for no byte.
class ByteSpelling {
public:
    ByteSpelling() {
        byte_of_.fill(-1);
        auto const code_points = make_byte_to_code_point();
        for (int byte = 0; byte < 256; ++byte) byte_of_[code_points[byte]] = static_cast<std::int16_t>(byte);
    }

    std::optional<std::string> bytes(std::string_view spelled) const {
        std::string raw;
        for (std::size_t position = 0; position < spelled.size();) {
            CodePoint const code_point = decode_at(spelled, position);
            if (code_point.value >= byte_of_.size() || byte_of_[code_point.value] < 0) return std::nullopt;
            raw += static_cast<char>(byte_of_[code_point.value]);
            position += code_point.length;
        }
        return raw;
    }

private:
    static constexpr std::size_t largest_stand_in = 256 + 68;  // 68 bytes are not printable
    std::array<std::int16_t, largest_stand_in> byte_of_;  // code point -> byte, -1 where none
};

using Vocabulary = std::unordered_map<std::string, std::int32_t>;  // raw bytes -> id

// encoder.json: {"<spelled token>": id, ...}; ids must be exactly 0..n-1.
std::vector<std::string> read_encoder(std::filesystem::path const& path, ByteSpelling const& spelling) {
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(read_tokenizer_file(path));
    } catch (nlohmann::json::parse_error const& error) {
        fail_corrupt(path, "not valid JSON near byte {}", error.byte);
    }
    if (!json.is_object() || json.empty()) fail_corrupt(path, "expected a non-empty JSON object");
    std::vector<std::string> tokens(json.size());
    std::vector<bool> seen(json.size(), false);
    for (auto const& [spelled, id] : json.items()) {
        if (!id.is_number_integer()) fail_corrupt(path, "the id of {} is not an integer", spelled);
        auto const index = id.get<std::int64_t>();
        if (index < 0 || index >= static_cast<std::int64_t>(tokens.size()) || seen[index]) {
            fail_corrupt(path, "id {} of {} is out of range or repeated", index, spelled);
        }
        auto raw = spelling.bytes(spelled);
        if (!raw) fail_corrupt(path, "token {} is not spelled in GPT-2's byte alphabet", spelled);
        tokens[index] = std::move(*raw);
        seen[index] = true;
    }
    return tokens;
}

std::int32_t find_token(Vocabulary const& vocabulary, std::string const& raw) {
    auto const found = vocabulary.find(raw);
    return found == vocabulary.end() ? -1 : found->second;
}

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

struct Merge {
    std::int32_t rank;    // lower merges first
    std::int32_t result;  // the id of the two tokens joined
};
using MergeTable = std::unordered_map<std::uint64_t, Merge>;

// vocab.bpe: "#version: 0.2", then one merge per line, "<left> <right>", best first.
MergeTable read_merges(std::filesystem::path const& path, ByteSpelling const& spelling, Vocabulary const& vocabulary) {
    std::istringstream lines(read_tokenizer_file(path));
    std::string line;
    if (!std::getline(lines, line) || !line.starts_with("#version")) {
        fail_corrupt(path, "the first line is not \"#version: ...\"");
    }
    MergeTable merges;
    for (int line_number = 2; std::getline(lines, line); ++line_number) {
        if (line.empty()) continue;
        std::istringstream fields(line);
        std::string left_spelled, right_spelled, extra;
        if (!(fields >> left_spelled >> right_spelled) || (fields >> extra)) {
            fail_corrupt(path, "line {} is not two tokens", line_number);
        }
        auto const left = spelling.bytes(left_spelled);
        auto const right = spelling.bytes(right_spelled);
        if (!left || !right) fail_corrupt(path, "line {} is not spelled in GPT-2's byte alphabet", line_number);
        std::int32_t const left_id = find_token(vocabulary, *left);
        std::int32_t const right_id = find_token(vocabulary, *right);
        std::int32_t const result_id = find_token(vocabulary, *left + *right);
        if (left_id < 0 || right_id < 0 || result_id < 0) {
            fail_corrupt(path, "line {} merges tokens that encoder.json lacks", line_number);
        }
        merges.try_emplace(pair_key(left_id, right_id), Merge{line_number - 2, result_id});
    }
    return merges;
}

// ---- Pre-tokenisation -----------------------------------------------------------------------------------------------

enum class CharClass { letter, number, space, other };

// Unicode's White_Space property outside ASCII, which is what \s matches in the `regex` module GPT-2 uses.
bool is_unicode_space(char32_t c) {
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

// \p{N} outside ASCII, approximated by the number characters a text is likely to hold: Latin-1 superscripts and
// fractions, the decimal digits of the major scripts, super- and subscripts, Roman numerals and number forms,
// circled numbers, CJK numerals and full-width digits (468 of Unicode's 1,781 non-ASCII numbers).
bool is_unicode_number(char32_t c) {
    static constexpr std::array<std::pair<char32_t, char32_t>, 38> ranges = {{
        {0xB2, 0xB3},     {0xB9, 0xB9},     {0xBC, 0xBE},     {0x660, 0x669},   {0x6F0, 0x6F9},   {0x966, 0x96F},
        {0x9E6, 0x9EF},   {0xA66, 0xA6F},   {0xAE6, 0xAEF},   {0xB66, 0xB6F},   {0xBE6, 0xBF2},   {0xC66, 0xC6F},
        {0xCE6, 0xCEF},   {0xD66, 0xD78},   {0xE50, 0xE59},   {0xED0, 0xED9},   {0xF20, 0xF33},   {0x1040, 0x1049},
        {0x17E0, 0x17E9}, {0x1810, 0x1819}, {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2182},
        {0x2185, 0x2189}, {0x2460, 0x249B}, {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x3007, 0x3007}, {0x3021, 0x3029},
        {0x3038, 0x303A}, {0x3192, 0x3195}, {0x3220, 0x3229}, {0x3248, 0x324F}, {0x3251, 0x325F}, {0x3280, 0x3289},
        {0x32B1, 0x32BF}, {0xFF10, 0xFF19},
    }};
    auto const after = std::upper_bound(ranges.begin(), ranges.end(), c,
                                        [](char32_t value, auto const& range) { return value < range.first; });
    return after != ranges.begin() && c <= std::prev(after)->second;
}

// \p{L} outside ASCII: glibc's Unicode "alpha" class from the C.UTF-8 locale, asked through a private locale
// object so that the process's global locale is neither read nor changed. glibc's alpha holds every letter but
// also most combining marks (the vowel signs of Indic scripts, Hebrew and Arabic points), which GPT-2 does not
// count as letters, so text in those scripts can split into different pieces; it also holds the digits of
// scripts missing from is_unicode_number (asked first). Without a C.UTF-8 locale every other non-ASCII
// character counts as a letter.
bool is_unicode_letter(char32_t c) {
    static locale_t const utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t{});
    return utf8_locale == locale_t{} || iswalpha_l(static_cast<wint_t>(c), utf8_locale) != 0;
}

// ASCII is classified exactly as the `regex` module does (\s is \t \n \v \f \r and space, not \x1c-\x1f).
CharClass classify(char32_t c) {
    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::letter;
        if (c >= '0' && c <= '9') return CharClass::number;
        if (c == ' ' || (c >= '\t' && c <= '\r')) return CharClass::space;
        return CharClass::other;
    }
    if (c == invalid_code_point) return CharClass::other;
    if (is_unicode_space(c)) return CharClass::space;
    if (is_unicode_number(c)) return CharClass::number;
    return is_unicode_letter(c) ? CharClass::letter : CharClass::other;
}

CharClass class_at(std::string_view text, std::size_t position) { return classify(decode_at(text, position).value); }

// 's|'t|'re|'ve|'m|'ll|'d (case-sensitive, as in GPT-2); 0 when none starts at `begin`.
std::size_t contraction_end(std::string_view text, std::size_t begin) {
    if (text[begin] != '\'') return 0;
    std::string_view const rest = text.substr(begin + 1);
    for (std::string_view suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
        if (rest.starts_with(suffix)) return begin + 1 + suffix.size();
    }
    return 0;
}

std::size_t run_end(std::string_view text, std::size_t position, CharClass kind) {
    while (position < text.size()) {
        CodePoint const code_point = decode_at(text, position);
        if (classify(code_point.value) != kind) break;
        position += code_point.length;
    }
    return position;
}

// \s+(?!\S)|\s+ : a whitespace run that ends the text is one piece; otherwise its last character is left to
// start the next piece (so "  word" splits as " ", " word"), unless it is the run's only character.
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

// The end of the piece that starts at `begin`: the pattern's alternatives tried in order.
std::size_t piece_end(std::string_view text, std::size_t begin) {
    if (std::size_t const end = contraction_end(text, begin)) return end;
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional leading space, then a run of one class.
    std::size_t const body = text[begin] == ' ' && begin + 1 < text.size() ? begin + 1 : begin;
    CharClass const kind = class_at(text, body);
    if (kind != CharClass::space) return run_end(text, body, kind);
    return whitespace_end(text, begin);
}

// ---- Byte-pair merging ----------------------------------------------------------------------------------------------

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// Pieces repeat constantly in natural text, so each encode() call remembers the ids of the pieces it has seen.
// The cache lives for one call rather than in the tokenizer so that encode() stays const and thread-safe.
class PieceCache {
public:
    std::vector<std::int32_t> const* find(std::string_view piece) const {
        auto const found = ids_.find(piece);
        return found == ids_.end() ? nullptr : &found->second;
    }
    void add(std::string_view piece, std::vector<std::int32_t> ids) {
        if (ids_.size() >= capacity) ids_.clear();  // bounds memory on text with endless distinct pieces
        ids_.emplace(std::string(piece), std::move(ids));
    }

private:
    static constexpr std::size_t capacity = 1 << 20;
    std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>> ids_;
};

class Gpt2Tokenizer final : public Tokenizer {
public:
    explicit Gpt2Tokenizer(std::filesystem::path const& directory) {
        ByteSpelling const spelling;
        std::filesystem::path const encoder_path = directory / "encoder.json";
        tokens_ = read_encoder(encoder_path, spelling);
        Vocabulary vocabulary;
        for (std::size_t id = 0; id < tokens_.size(); ++id) {
            vocabulary.emplace(tokens_[id], static_cast<std::int32_t>(id));
        }
        for (int byte = 0; byte < 256; ++byte) {
            byte_ids_[byte] = find_token(vocabulary, std::string(1, static_cast<char>(byte)));
            if (byte_ids_[byte] < 0) fail_corrupt(encoder_path, "no token for byte {}", byte);
        }
        eot_id_ = find_token(vocabulary, std::string(eot_text));
        if (eot_id_ < 0) fail_corrupt(encoder_path, "no {} token", eot_text);
        merges_ = read_merges(directory / "vocab.bpe", spelling, vocabulary);
    }

    std::vector<std::int32_t> encode(std::string_view text) const override {
        std::vector<std::int32_t> ids;
        ids.reserve(text.size() / 4);  // GPT-2 averages about four bytes of English per token
        PieceCache cache;
        for (std::size_t begin = 0; begin < text.size();) {
            std::size_t const end = piece_end(text, begin);
            std::string_view const piece = text.substr(begin, end - begin);
            if (auto const* known = cache.find(piece)) {
                ids.insert(ids.end(), known->begin(), known->end());
            } else {
                std::vector<std::int32_t> piece_ids = merge_bytes(piece);
                ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
                cache.add(piece, std::move(piece_ids));
            }
            begin = end;
        }
        return ids;
    }

    std::string decode(std::span<std::int32_t const> ids) const override {
        std::string text;
        for (std::int32_t id : ids) {
            require(id >= 0 && id < vocab_size(), "token id {} is outside the GPT-2 vocabulary 0..{}", id,
                    vocab_size() - 1);
            text += tokens_[id];
        }
        return text;
    }

    std::int32_t vocab_size() const override { return static_cast<std::int32_t>(tokens_.size()); }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return "gpt2"; }

private:
    std::vector<std::int32_t> merge_bytes(std::string_view piece) const;

    std::vector<std::string> tokens_;  // id -> raw bytes
    std::array<std::int32_t, 256> byte_ids_{};
    std::int32_t eot_id_ = -1;
    MergeTable merges_;
};

// GPT-2 merges every occurrence of the best-ranked pair, left to right, then looks for the next best pair. A
// min-heap of (rank, position) does the same in O(n log n) rather than O(n^2) for long pieces: a merge's result
// only ever takes part in merges ranked after it (BPE learned it first), so finishing one rank before the next
// is automatic, and ties go to the leftmost pair. Heap entries made stale by a merge are skipped when popped.
std::vector<std::int32_t> Gpt2Tokenizer::merge_bytes(std::string_view piece) const {
    struct Symbol {
        std::int32_t id;  // -1 once merged into its left neighbour
        int previous;     // -1 at the start
        int next;         // -1 at the end
    };
    struct Candidate {
        std::int32_t rank;
        int left;
        std::int32_t left_id;
        std::int32_t right_id;
        std::int32_t result;
        bool operator>(Candidate const& other) const {
            return rank != other.rank ? rank > other.rank : left > other.left;
        }
    };
    int const count = static_cast<int>(piece.size());
    std::vector<Symbol> symbols(piece.size());
    for (int i = 0; i < count; ++i) {
        symbols[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < count ? i + 1 : -1};
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> candidates;
    auto const consider = [&](int left) {
        if (left < 0 || symbols[left].next < 0) return;
        std::int32_t const left_id = symbols[left].id;
        std::int32_t const right_id = symbols[symbols[left].next].id;
        auto const found = merges_.find(pair_key(left_id, right_id));
        if (found == merges_.end()) return;
        candidates.push({found->second.rank, left, left_id, right_id, found->second.result});
    };
    for (int i = 0; i + 1 < count; ++i) consider(i);
    while (!candidates.empty()) {
        Candidate const best = candidates.top();
        candidates.pop();
        Symbol& left = symbols[best.left];
        if (left.id != best.left_id || left.next < 0 || symbols[left.next].id != best.right_id) continue;
        Symbol& right = symbols[left.next];
        left.id = best.result;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].previous = best.left;
        right.id = -1;
        consider(left.previous);
        consider(best.left);
    }
    std::vector<std::int32_t> ids;
    for (int i = count > 0 ? 0 : -1; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
    return ids;
}

}  // namespace

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(std::filesystem::path const& gpt2_dir) {
    return std::make_unique<Gpt2Tokenizer>(gpt2_dir);
}

}  // namespace axonn
