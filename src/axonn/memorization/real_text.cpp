#include "axonn/memorization/real_text.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/inflate.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace axonn {
namespace {

constexpr char const* fetch_hint = "run scripts/fetch-corpus (apt-get download dict-devil, dpkg-deb -x into "
                                   "data/corpus/devil)";
constexpr std::size_t max_dictionary_bytes = std::size_t{64} << 20;

// dictd's base-64 numbers: digits A-Z a-z 0-9 + /, most significant first.
std::int64_t base64_number(std::string_view digits, std::filesystem::path const& index, int line) {
    static constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::int64_t value = 0;
    AXONN_REQUIRE(!digits.empty() && digits.size() <= 8, "{} line {}: '{}' is not a dictd number: {}", index.string(),
                  line, digits, fetch_hint);
    for (char c : digits) {
        std::size_t const digit = alphabet.find(c);
        AXONN_REQUIRE(digit != std::string_view::npos, "{} line {}: '{}' is not a dictd number: {}", index.string(),
                      line, digits, fetch_hint);
        value = value * 64 + static_cast<std::int64_t>(digit);
    }
    return value;
}

// Splits text into pieces: a run of letters with the one space before it, or any other single byte.
template <typename Visit>
void for_each_piece(std::string_view text, Visit&& visit) {
    auto const letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t start = i;
        if (text[i] == ' ' && i + 1 < text.size() && letter(text[i + 1])) ++i;
        if (letter(text[i])) {
            while (i < text.size() && letter(text[i])) ++i;
        } else {
            ++i;
        }
        visit(text.substr(start, i - start));
    }
}

}  // namespace

std::vector<std::string> read_devils_dictionary(std::filesystem::path const& folder) {
    std::filesystem::path const index_path = folder / "devil.index", dict_path = folder / "devil.dict.dz";
    std::string const index = read_input_file(index_path, "Devil's Dictionary index", fetch_hint, 16 << 20);
    std::string const dictionary = inflate_bounded(
        read_input_file(dict_path, "Devil's Dictionary", fetch_hint, 16 << 20), 0, max_dictionary_bytes, dict_path,
        fetch_hint);
    std::vector<std::string> entries;
    std::int64_t copied = 0;  // entries may overlap: their total, not each one, is what must stay bounded
    std::size_t start = 0;
    for (int line = 1; start < index.size(); ++line) {
        std::size_t const end = std::min(index.find('\n', start), index.size());
        std::string_view const text(index.data() + start, end - start);
        start = end + 1;
        if (text.empty() || text.rfind("00database", 0) == 0 || text.rfind("00-database", 0) == 0) continue;
        std::size_t const tab1 = text.find('\t'), tab2 = text.find('\t', tab1 + 1);
        AXONN_REQUIRE(tab1 != std::string_view::npos && tab2 != std::string_view::npos,
                      "{} line {} is not \"headword TAB "
                      "offset TAB length\": {}",
                      index_path.string(), line, fetch_hint);
        std::int64_t const offset = base64_number(text.substr(tab1 + 1, tab2 - tab1 - 1), index_path, line);
        std::int64_t const length = base64_number(text.substr(tab2 + 1), index_path, line);
        AXONN_REQUIRE(offset + length <= static_cast<std::int64_t>(dictionary.size()),
                      "{} line {} points past the end of "
                      "the dictionary: {}",
                      index_path.string(), line, fetch_hint);
        copied += length;
        AXONN_REQUIRE(copied <= static_cast<std::int64_t>(max_dictionary_bytes),
                      "{}'s entries add up to more than {} "
                      "bytes: {}",
                      index_path.string(), max_dictionary_bytes, fetch_hint);
        entries.push_back(dictionary.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)));
    }
    AXONN_REQUIRE(!entries.empty(), "{} lists no entry: {}", index_path.string(), fetch_hint);
    return entries;
}

WordVocabulary::WordVocabulary(std::string_view text, int words) {
    std::map<std::string, std::int64_t, std::less<>> counts;
    for_each_piece(text, [&](std::string_view piece) { ++counts[std::string(piece)]; });
    std::vector<std::pair<std::int64_t, std::string>> ranked;
    for (auto const& [piece, count] : counts) {
        if (piece.size() > 1) ranked.emplace_back(-count, piece);  // single bytes are in the byte range anyway
    }
    std::sort(ranked.begin(), ranked.end());
    for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < words; ++i) {
        ids_[ranked[i].second] = static_cast<std::int32_t>(words_.size());
        words_.push_back(ranked[i].second);
    }
}

std::vector<std::int32_t> WordVocabulary::encode(std::string_view text) const {
    std::vector<std::int32_t> ids;
    for_each_piece(text, [&](std::string_view piece) {
        auto const found = ids_.find(std::string(piece));
        if (found != ids_.end()) {
            ids.push_back(found->second);
            return;
        }
        for (char c : piece) ids.push_back(static_cast<std::int32_t>(words_.size()) + static_cast<unsigned char>(c));
    });
    return ids;
}

std::string WordVocabulary::decode(std::vector<std::int32_t> const& ids) const {
    std::string text;
    for (std::int32_t id : ids) {
        if (id < static_cast<std::int32_t>(words_.size())) {
            text += words_[static_cast<std::size_t>(id)];
        } else {
            text += static_cast<char>(id - static_cast<std::int32_t>(words_.size()));
        }
    }
    return text;
}

}  // namespace axonn
