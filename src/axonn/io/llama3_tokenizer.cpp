// Llama 3's tokenizer, read from a Hugging Face tokenizer.json (byte-level BPE), reimplemented from what the
// file tells Hugging Face's tokenizers library to do:
//   1. cut out the added tokens ("added_tokens": <|begin_of_text|>, <|eot_id|>, ...) wherever their text
//      appears, leftmost first and the longest where several start at one place; each is its own id;
//   2. split the text between them into pieces with the Split pre-tokenizer's pattern, Llama 3's
//        (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
//        \s+(?!\S)|\s+
//      (matched by hand over UTF-8 code points, io/pretokenize.h);
//   3. a piece that is itself in the vocabulary is that one token ("ignore_merges": true, as Llama 3 sets);
//      any other is merged from its bytes by the ranks of "merges" (io/byte_level_bpe.h).
// Like the GPT-2 tokenizer, encode() adds no <|begin_of_text|> (the file's post-processor would): callers mark
// documents themselves. Anything else in a file (a normalizer, another pre-tokenizer or model) is refused, so
// that a file this code would tokenize differently from Hugging Face never loads.
#include "axonn/io/tokenizer.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/guarded_json.h"
#include "axonn/io/byte_level_bpe.h"
#include "axonn/io/pretokenize.h"
#include "axonn/io/utf8.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <utility>

namespace axonn {
namespace {

using nlohmann::json;

constexpr std::string_view llama3_pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|)"
    R"(\s+(?!\S)|\s+)";

// Llama 3 ends every pretraining document with it; the chat models end a turn with <|eot_id|> instead.
constexpr std::string_view end_of_text = "<|end_of_text|>";

constexpr int max_tokenizer_json_depth = 16;  // a tokenizer.json nests 5 levels deep

// Ids from a file are refused from here on rather than trusted to size the vocabulary: the largest tokenizers
// have a few hundred thousand tokens.
constexpr std::int64_t id_limit = std::int64_t{1} << 24;

// ---- Reading tokenizer.json -----------------------------------------------------------------------------------------

template <typename... Args>
[[noreturn]] void fail_corrupt_tokenizer_json(std::filesystem::path const& path, fmt::format_string<Args...> detail,
                               Args&&... args) {
    fail("tokenizer file {} is corrupt ({}): fetch it again (scripts/fetch-tokenizer fetches Llama 3's)",
         path.string(), fmt::format(detail, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_unsupported(std::filesystem::path const& path, fmt::format_string<Args...> detail,
                                   Args&&... args) {
    fail("tokenizer file {} is not supported ({}): axonn reads byte-level BPE tokenizers that split text with Llama "
         "3's pattern, as Llama 3's tokenizer.json does",
         path.string(), fmt::format(detail, std::forward<Args>(args)...));
}

json parse_tokenizer_file(std::filesystem::path const& path) {
    std::string const text = read_input_file(path, "tokenizer file", "run scripts/fetch-tokenizer (or set "
                                             "AXONN_LLAMA3_DIR to a folder holding tokenizer.json)",
                                             std::uint64_t{64} << 20);
    try {
        return parse_guarded_json(text, max_tokenizer_json_depth);
    } catch (Error const& error) {
        fail_corrupt_tokenizer_json(path, "{}", error.what());
    }
}

// The member `key` of `object`, which must be of the kind `is_kind` checks; `kind` names it in the message.
json const& member(std::filesystem::path const& path, json const& object, std::string_view key,
                   bool (json::*is_kind)() const noexcept, std::string_view kind) {
    auto const found = object.find(key);
    if (found == object.end() || !((*found).*is_kind)()) {
        fail_corrupt_tokenizer_json(path, "\"{}\" is not {}", key, kind);
    }
    return *found;
}

bool is_null_or_absent(json const& object, std::string_view key) {
    auto const found = object.find(key);
    return found == object.end() || found->is_null();
}

// The value of an optional boolean member, false when absent or null.
bool flag(json const& object, std::string_view key) {
    auto const found = object.find(key);
    return found != object.end() && found->is_boolean() && found->get<bool>();
}

// The value of an optional string member, empty when absent or not a string.
std::string text_of(json const& object, std::string_view key) {
    auto const found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

std::string type_of(json const& object) {
    std::string const type = text_of(object, "type");
    return type.empty() ? "of no type" : type;
}

// The pre-tokenizer must be Llama 3's: a Split on its pattern (pieces kept as they are), then ByteLevel without
// its own (GPT-2's) regex, which only spells the bytes.
void require_llama3_pre_tokenizer(std::filesystem::path const& path, json const& root) {
    auto const found = root.find("pre_tokenizer");
    if (found == root.end() || !found->is_object() || type_of(*found) != "Sequence") {
        fail_unsupported(path, "the pre_tokenizer is not a Sequence of a Split and a ByteLevel");
    }
    json const& steps = member(path, *found, "pretokenizers", &json::is_array, "a list");
    if (steps.size() != 2 || !steps[0].is_object() || !steps[1].is_object() || type_of(steps[0]) != "Split" ||
        type_of(steps[1]) != "ByteLevel") {
        fail_unsupported(path, "the pre_tokenizer is not a Sequence of a Split and a ByteLevel");
    }
    json const& split = steps[0];
    auto const pattern = split.find("pattern");
    bool const llama3_split = pattern != split.end() && pattern->is_object() &&
                              text_of(*pattern, "Regex") == llama3_pattern &&
                              text_of(split, "behavior") == "Isolated" && !flag(split, "invert");
    if (!llama3_split) fail_unsupported(path, "the Split pre-tokenizer is not Llama 3's pattern, isolated");
    if (flag(steps[1], "use_regex") || flag(steps[1], "add_prefix_space")) {
        fail_unsupported(path, "the ByteLevel pre-tokenizer has use_regex or add_prefix_space set");
    }
}

// The model must be a plain byte-level BPE: no dropout, byte fallback or word prefixes and suffixes.
void require_plain_bpe(std::filesystem::path const& path, json const& model) {
    if (type_of(model) != "BPE") fail_unsupported(path, "the model is {}, not BPE", type_of(model));
    for (std::string_view const key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
        auto const found = model.find(key);
        bool const unset = found == model.end() || found->is_null() || (found->is_string() && found->empty());
        if (!unset) fail_unsupported(path, "the BPE model sets {}", key);
    }
    if (flag(model, "byte_fallback")) fail_unsupported(path, "the BPE model sets byte_fallback");
}

void require_supported(std::filesystem::path const& path, json const& root) {
    if (!root.is_object()) fail_corrupt_tokenizer_json(path, "expected a JSON object");
    require_plain_bpe(path, member(path, root, "model", &json::is_object, "an object"));
    if (!is_null_or_absent(root, "normalizer")) {
        fail_unsupported(path, "it has a normalizer, {}", type_of(root["normalizer"]));
    }
    require_llama3_pre_tokenizer(path, root);
    if (!is_null_or_absent(root, "decoder") && type_of(root["decoder"]) != "ByteLevel") {
        fail_unsupported(path, "the decoder is {}, not ByteLevel", type_of(root["decoder"]));
    }
}

// One merge, "left right" or ["left", "right"], as spelled in the file.
// Views into `merge`'s strings.
std::pair<std::string_view, std::string_view> merge_pair(std::filesystem::path const& path, json const& merge,
                                                         std::size_t index) {
    if (merge.is_string()) {
        std::string_view const text = merge.get_ref<std::string const&>();
        std::size_t const space = text.find(' ');
        if (space != std::string::npos && text.find(' ', space + 1) == std::string::npos) {
            return {text.substr(0, space), text.substr(space + 1)};
        }
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
        return {merge[0].get_ref<std::string const&>(), merge[1].get_ref<std::string const&>()};
    }
    fail_corrupt_tokenizer_json(path, "merge {} is not two tokens", index);
}

struct AddedToken {
    std::string text;
    std::int32_t id;
};

// "added_tokens": [{"id": 128000, "content": "<|begin_of_text|>", ...}, ...]. Tokens that would strip the
// whitespace around them or match whole words only are refused: Llama 3 has none, and this code does not do it.
std::vector<AddedToken> read_added_tokens(std::filesystem::path const& path, json const& root) {
    std::vector<AddedToken> added;
    if (is_null_or_absent(root, "added_tokens")) return added;
    for (json const& entry : member(path, root, "added_tokens", &json::is_array, "a list")) {
        if (!entry.is_object()) fail_corrupt_tokenizer_json(path, "an added token is not an object");
        json const& id = member(path, entry, "id", &json::is_number_integer, "an integer");
        json const& content = member(path, entry, "content", &json::is_string, "a string");
        // (A JSON string is never `empty()` to nlohmann: its text is.)
        std::string const& text = content.get_ref<std::string const&>();
        if (text.empty() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= id_limit) {
            fail_corrupt_tokenizer_json(path, "added token {} has no text or an id out of range", content.dump());
        }
        for (std::string_view const key : {"lstrip", "rstrip", "single_word"}) {
            if (flag(entry, key)) fail_unsupported(path, "added token {} sets {}", content.dump(), key);
        }
        auto const same_text = std::find_if(added.begin(), added.end(),
                                            [&](AddedToken const& token) { return token.text == text; });
        if (same_text != added.end() && same_text->id != id.get<std::int32_t>()) {
            fail_corrupt_tokenizer_json(path, "added token {} is listed twice, as ids {} and {}", content.dump(),
                                        same_text->id, id.get<std::int32_t>());
        }
        if (same_text == added.end()) added.push_back({text, id.get<std::int32_t>()});
    }
    return added;
}

// ---- Encoding -------------------------------------------------------------------------------------------------------

bool is_line_break(char c) { return c == '\r' || c == '\n'; }

// The end of the piece that starts at `begin`: Llama 3's alternatives tried in order.
std::size_t llama3_piece_end(std::string_view text, std::size_t begin) {
    if (std::size_t const end = contraction_end(text, begin, LetterCase::ignored)) return end;
    CodePoint const first = decode_at(text, begin);
    CharClass const kind = classify(first.value);
    std::size_t const second = begin + first.length;
    // [^\r\n\p{L}\p{N}]?\p{L}+ : letters, after one character that is no line break, letter or number
    if (kind == CharClass::letter) return run_end(text, begin, CharClass::letter);
    if (kind != CharClass::number && !is_line_break(text[begin]) && second < text.size() &&
        class_at(text, second) == CharClass::letter) {
        return run_end(text, second, CharClass::letter);
    }
    // \p{N}{1,3} : numbers, three digits at most, so that 1234567 is 123, 456, 7
    if (kind == CharClass::number) return run_end(text, begin, CharClass::number, 3);
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*` : punctuation and symbols, after an optional space, with the line breaks after
    std::size_t const body = text[begin] == ' ' && second < text.size() ? second : begin;
    if (class_at(text, body) == CharClass::other) {
        std::size_t end = run_end(text, body, CharClass::other);
        while (end < text.size() && is_line_break(text[end])) ++end;
        return end;
    }
    // \s*[\r\n]+ : whitespace up to its last line break (a line break is one byte, never inside another character)
    std::size_t const spaces_end = run_end(text, begin, CharClass::space);
    std::size_t const last_break = text.substr(begin, spaces_end - begin).find_last_of("\r\n");
    if (last_break != std::string_view::npos) return begin + last_break + 1;
    return whitespace_end(text, begin);
}

class Llama3Tokenizer final : public Tokenizer {
public:
    explicit Llama3Tokenizer(std::filesystem::path const& directory) {
        std::filesystem::path const path = directory / "tokenizer.json";
        json const root = parse_tokenizer_file(path);
        require_supported(path, root);
        json const& model = root["model"];
        json const& vocab = member(path, model, "vocab", &json::is_object, "an object");
        json const& merges = member(path, model, "merges", &json::is_array, "a list");
        std::vector<AddedToken> added = read_added_tokens(path, root);
        ignore_merges_ = flag(model, "ignore_merges");
        read_vocabulary(path, vocab);
        read_merges(path, merges);
        add_tokens(path, std::move(added));
    }

    std::vector<std::int32_t> encode(std::string_view text) const override {
        std::vector<std::int32_t> ids;
        ids.reserve(text.size() / 4);  // about four bytes of English per token
        PieceCache cache;
        auto const encode_piece = [this](std::string_view piece) { return piece_ids(piece); };
        std::size_t begin = 0;
        for (std::size_t position = 0; position < text.size();) {
            AddedToken const* added = added_token_at(text, position);
            if (added == nullptr) {
                ++position;
                continue;
            }
            append_piece_ids(text.substr(begin, position - begin), llama3_piece_end, encode_piece, cache, ids);
            ids.push_back(added->id);
            position += added->text.size();
            begin = position;
        }
        append_piece_ids(text.substr(begin), llama3_piece_end, encode_piece, cache, ids);
        return ids;
    }

    std::string decode(std::span<std::int32_t const> ids) const override {
        return decode_tokens(tokens_, ids, "Llama 3");
    }

    std::int32_t vocab_size() const override { return static_cast<std::int32_t>(tokens_.size()); }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return "llama3"; }

private:
    // model.vocab: {"<spelled token>": id, ...}, spelled as in GPT-2's files.
    void read_vocabulary(std::filesystem::path const& path, json const& vocab) {
        ByteSpelling const spelling;
        vocabulary_.reserve(vocab.size());
        for (auto const& [spelled, id] : vocab.items()) {
            if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= id_limit) {
                fail_corrupt_tokenizer_json(path, "the id of vocabulary token {} is not an integer in range",
                                            quoted_text(spelled));
            }
            auto raw = spelling.bytes(spelled);
            if (!raw) fail_unsupported(path, "vocabulary token {} is not spelled in bytes, as byte-level BPE's are",
                                       quoted_text(spelled));
            vocabulary_.emplace(std::move(*raw), id.get<std::int32_t>());
        }
        if (auto const byte = BytePairMerger::missing_byte(vocabulary_)) {
            fail_corrupt_tokenizer_json(path, "no vocabulary token for byte {}", *byte);
        }
        merger_ = BytePairMerger(vocabulary_);
    }

    void read_merges(std::filesystem::path const& path, json const& merges) {
        ByteSpelling const spelling;
        merger_.reserve_merges(merges.size());
        for (std::size_t index = 0; index < merges.size(); ++index) {
            auto const [left_spelled, right_spelled] = merge_pair(path, merges[index], index);
            auto const left = spelling.bytes(left_spelled);
            auto const right = spelling.bytes(right_spelled);
            if (!left || !right || !merger_.add_merge(*left, *right, vocabulary_)) {
                fail_corrupt_tokenizer_json(path, "merge {} joins tokens that the vocabulary lacks", index);
            }
        }
    }

    // Fills tokens_ (id -> bytes) from the vocabulary and the added tokens, which must leave no id without text.
    void add_tokens(std::filesystem::path const& path, std::vector<AddedToken> added) {
        std::int32_t largest = -1;
        for (auto const& [raw, id] : vocabulary_) largest = std::max(largest, id);
        for (AddedToken const& token : added) largest = std::max(largest, token.id);
        tokens_.resize(static_cast<std::size_t>(largest) + 1);
        std::vector<bool> known(tokens_.size(), false);
        for (auto const& [raw, id] : vocabulary_) {
            if (known[id]) fail_corrupt_tokenizer_json(path, "id {} names two vocabulary tokens", id);
            tokens_[id] = raw;
            known[id] = true;
        }
        for (AddedToken const& token : added) {
            // The same token listed in both (GPT-2's files list <|endoftext|> so) is one token; another text under
            // a taken id made its text decode as the added token's.
            if (known[token.id] && tokens_[token.id] != token.text) {
                // A vocabulary token's bytes need not be UTF-8 (a byte-level token is any bytes): quoted with U+FFFD
                // in place of a byte that is not, where dump() would throw.
                fail_corrupt_tokenizer_json(
                    path, "added token {} takes id {}, which is already the token {}", nlohmann::json(token.text).dump(),
                    token.id,
                    nlohmann::json(tokens_[token.id]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
            }
            tokens_[token.id] = token.text;
            known[token.id] = true;
            if (token.text == end_of_text) eot_id_ = token.id;
        }
        auto const unknown = std::find(known.begin(), known.end(), false);
        if (unknown != known.end()) fail_corrupt_tokenizer_json(path, "id {} has no token", unknown - known.begin());
        if (eot_id_ < 0) fail_unsupported(path, "it has no {} token to end documents with", end_of_text);
        // Longest first, so that the first match at a place is the longest there.
        std::sort(added.begin(), added.end(),
                  [](AddedToken const& a, AddedToken const& b) { return a.text.size() > b.text.size(); });
        added_ = std::move(added);
        for (AddedToken const& token : added_) starts_added_[static_cast<unsigned char>(token.text[0])] = true;
    }

    // The longest added token whose text starts at text[position], or null.
    AddedToken const* added_token_at(std::string_view text, std::size_t position) const {
        if (!starts_added_[static_cast<unsigned char>(text[position])]) return nullptr;
        auto const found = std::find_if(added_.begin(), added_.end(), [&](AddedToken const& token) {
            return text.substr(position).starts_with(token.text);
        });
        return found == added_.end() ? nullptr : &*found;
    }

    std::vector<std::int32_t> piece_ids(std::string_view piece) const {
        if (ignore_merges_) {
            std::int32_t const whole = find_token(vocabulary_, piece);
            if (whole >= 0) return {whole};
        }
        return merger_.merge(piece);
    }

    Vocabulary vocabulary_;            // the BPE model's tokens, without the added ones
    std::vector<std::string> tokens_;  // id -> raw bytes (an added token's text)
    BytePairMerger merger_;
    bool ignore_merges_ = false;
    std::vector<AddedToken> added_;    // longest first
    std::array<bool, 256> starts_added_{};  // the first bytes of added tokens, to pass over text quickly
    std::int32_t eot_id_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> make_llama3_tokenizer(std::filesystem::path const& directory) {
    return std::make_unique<Llama3Tokenizer>(directory);
}

}  // namespace axonn
