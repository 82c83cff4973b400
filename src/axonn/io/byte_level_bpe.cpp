#include "axonn/io/byte_level_bpe.h"

#include "axonn/core/error.h"
#include "axonn/io/utf8.h"

#include <queue>

namespace axonn {
namespace {

// GPT-2's bytes_to_unicode(): the code point that stands for each byte in the files.
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

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

}  // namespace

ByteSpelling::ByteSpelling() {
    byte_of_.fill(-1);
    auto const code_points = make_byte_to_code_point();
    for (int byte = 0; byte < 256; ++byte) byte_of_[code_points[byte]] = static_cast<std::int16_t>(byte);
}

std::optional<std::string> ByteSpelling::bytes(std::string_view spelled) const {
    std::string raw;
    for (std::size_t position = 0; position < spelled.size();) {
        CodePoint const code_point = decode_at(spelled, position);
        if (code_point.value >= byte_of_.size() || byte_of_[code_point.value] < 0) return std::nullopt;
        raw += static_cast<char>(byte_of_[code_point.value]);
        position += code_point.length;
    }
    return raw;
}

std::int32_t find_token(Vocabulary const& vocabulary, std::string_view raw) {
    auto const found = vocabulary.find(raw);
    return found == vocabulary.end() ? -1 : found->second;
}

std::string decode_tokens(std::vector<std::string> const& tokens, std::span<std::int32_t const> ids,
                          std::string_view vocabulary) {
    auto const size = static_cast<std::int32_t>(tokens.size());
    std::string text;
    for (std::int32_t id : ids) {
        AXONN_REQUIRE(id >= 0 && id < size, "token id {} is outside the {} vocabulary 0..{}", id, vocabulary, size - 1);
        text += tokens[id];
    }
    return text;
}

std::optional<int> BytePairMerger::missing_byte(Vocabulary const& vocabulary) {
    for (int byte = 0; byte < 256; ++byte) {
        if (!vocabulary.contains(std::string(1, static_cast<char>(byte)))) return byte;
    }
    return std::nullopt;
}

BytePairMerger::BytePairMerger(Vocabulary const& vocabulary) {
    for (int byte = 0; byte < 256; ++byte) {
        byte_ids_[byte] = find_token(vocabulary, std::string(1, static_cast<char>(byte)));
    }
}

bool BytePairMerger::add_merge(std::string_view left, std::string_view right, Vocabulary const& vocabulary) {
    std::int32_t const left_id = find_token(vocabulary, left);
    std::int32_t const right_id = find_token(vocabulary, right);
    std::string joined(left);
    joined += right;
    std::int32_t const result_id = find_token(vocabulary, joined);
    if (left_id < 0 || right_id < 0 || result_id < 0) return false;
    merges_.try_emplace(pair_key(left_id, right_id), Merge{static_cast<std::int32_t>(merges_.size()), result_id});
    return true;
}

// Merges every occurrence of the best-ranked pair, left to right, then looks for the next best pair. A min-heap
// of (rank, position) does the same in O(n log n) rather than O(n^2) for long pieces: a merge's result only ever
// takes part in merges ranked after it (BPE learned it first), so finishing one rank before the next is
// automatic, and ties go to the leftmost pair. Heap entries made stale by a merge are skipped when popped.
std::vector<std::int32_t> BytePairMerger::merge(std::string_view piece) const {
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

std::vector<std::int32_t> const* PieceCache::find(std::string_view piece) const {
    auto const found = ids_.find(piece);
    return found == ids_.end() ? nullptr : &found->second;
}

void PieceCache::add(std::string_view piece, std::vector<std::int32_t> ids) {
    if (ids_.size() >= capacity) ids_.clear();  // bounds memory on text with endless distinct pieces
    ids_.emplace(std::string(piece), std::move(ids));
}

}  // namespace axonn
