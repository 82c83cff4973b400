// The machinery that byte-level BPE tokenizers (GPT-2's, Llama 3's) share: their files spell bytes through
// GPT-2's bytes-to-unicode map, their tokens are merged from single bytes by ranked pairs, and their text is
// encoded piece by piece. Each tokenizer adds its own files' format and its own way of cutting text into pieces.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace axonn {

// A token as spelled in the files -> the raw bytes it stands for (printable characters stand for themselves, the
// rest for code points from 256 up); nullopt if a character stands for no byte.
class ByteSpelling {
public:
    ByteSpelling();
    std::optional<std::string> bytes(std::string_view spelled) const;

private:
    static constexpr std::size_t largest_stand_in = 256 + 68;  // 68 bytes are not printable
    std::array<std::int16_t, largest_stand_in> byte_of_;  // code point -> byte, -1 where none
};

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// Raw bytes -> id, looked up by string_view without a copy (a Llama 3 tokenizer.json's 280,000 merges are three
// lookups each).
using Vocabulary = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;

// The id of `raw`, or -1 if the vocabulary lacks it.
std::int32_t find_token(Vocabulary const& vocabulary, std::string_view raw);

// The bytes of `ids`, each the index of its bytes in `tokens`; an id outside them is an axonn::Error naming
// `vocabulary` ("GPT-2", "Llama 3").
std::string decode_tokens(std::vector<std::string> const& tokens, std::span<std::int32_t const> ids,
                          std::string_view vocabulary);

// Turns a piece of text into tokens: one per byte, then the adjacent pairs merged in the order of their ranks.
class BytePairMerger {
public:
    BytePairMerger() = default;  // merges nothing: set with the vocabulary once it is read
    // The vocabulary must hold every single byte: missing_byte() names one it lacks.
    explicit BytePairMerger(Vocabulary const& vocabulary);
    static std::optional<int> missing_byte(Vocabulary const& vocabulary);

    // Room for `count` merges, so that adding them never rehashes.
    void reserve_merges(std::size_t count) { merges_.reserve(count); }
    // Adds the merge ranked after all added so far (a pair already added keeps its first rank); false, adding
    // nothing, if the vocabulary lacks either token or the two joined.
    bool add_merge(std::string_view left, std::string_view right, Vocabulary const& vocabulary);
    // The distinct merges added.
    std::size_t merge_count() const { return merges_.size(); }

    std::vector<std::int32_t> merge(std::string_view piece) const;

private:
    struct Merge {
        std::int32_t rank;    // lower merges first
        std::int32_t result;  // the id of the two tokens joined
    };
    std::array<std::int32_t, 256> byte_ids_{};
    std::unordered_map<std::uint64_t, Merge> merges_;  // (left id, right id) -> the merge
};

// Pieces repeat constantly in natural text, so each encode() call remembers the ids of the pieces it has seen.
// The cache lives for one call rather than in the tokenizer so that encode() stays const and thread-safe.
class PieceCache {
public:
    std::vector<std::int32_t> const* find(std::string_view piece) const;
    void add(std::string_view piece, std::vector<std::int32_t> ids);

private:
    static constexpr std::size_t capacity = 1 << 20;
    std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>> ids_;
};

// Appends the ids of `text` to `ids`: piece_end(text, begin) is where the piece starting at `begin` ends, and
// encode_piece(piece) its ids unless the cache knows them.
template <typename PieceEnd, typename EncodePiece>
void append_piece_ids(std::string_view text, PieceEnd const& piece_end, EncodePiece const& encode_piece,
                      PieceCache& cache, std::vector<std::int32_t>& ids) {
    for (std::size_t begin = 0; begin < text.size();) {
        std::size_t const end = piece_end(text, begin);
        std::string_view const piece = text.substr(begin, end - begin);
        if (auto const* known = cache.find(piece)) {
            ids.insert(ids.end(), known->begin(), known->end());
        } else {
            std::vector<std::int32_t> piece_ids = encode_piece(piece);
            ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
            cache.add(piece, std::move(piece_ids));
        }
        begin = end;
    }
}

}  // namespace axonn
