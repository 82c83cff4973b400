// The study's real-text option: entries of Ambrose Bierce's The Devil's Dictionary (public domain; Debian's
// dict-devil package) as canaries inside Jane Austen's six novels as background. Real text needs a tokenizer
// whose dropped targets cannot be read off the spelling (under characters, "Elizabet_" gives away "h", and Goldfish
// would look weaker than it is): WordVocabulary keeps the most frequent words (with their leading space) and
// punctuation marks of the background as tokens, and spells every other word in bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace axonn {

// The dictionary's entries, in its index's order, from a folder holding devil.index and devil.dict.dz (the dictd
// format: each index line is "headword TAB offset TAB length", the numbers in base 64; the dictionary a gzip
// stream). A missing or damaged file is an axonn::Error that says how to fetch the package.
std::vector<std::string> read_devils_dictionary(std::filesystem::path const& folder);

class WordVocabulary {
public:
    // The `words` most frequent pieces of `text` (a piece: a run of letters with the space before it, or any other
    // single byte), then the 256 bytes.
    WordVocabulary(std::string_view text, int words);

    int size() const { return static_cast<int>(words_.size()) + 256; }
    std::vector<std::int32_t> encode(std::string_view text) const;
    std::string decode(std::vector<std::int32_t> const& ids) const;

private:
    std::vector<std::string> words_;
    std::unordered_map<std::string, std::int32_t> ids_;
};

}  // namespace axonn
