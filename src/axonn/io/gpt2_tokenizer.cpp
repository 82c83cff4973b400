// OpenAI's GPT-2 tokenizer (byte-level BPE), reimplemented from openai/gpt-2 src/encoder.py:
//   1. split the text into pieces with GPT-2's pre-tokenisation pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      (matched by hand over UTF-8 code points: no regex library is needed and none is fast enough);
//   2. turn each piece into one symbol per byte and repeatedly merge the adjacent pair that vocab.bpe ranks first
//      (io/byte_level_bpe.h).
// The files spell bytes through GPT-2's bytes-to-unicode map; they are converted to raw bytes once at load, so
// encoding and decoding work on bytes and token ids only.
#include "axonn/io/tokenizer.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/guarded_json.h"
#include "axonn/io/byte_level_bpe.h"
#include "axonn/io/pretokenize.h"
#include "axonn/io/utf8.h"

#include <nlohmann/json.hpp>

#include <sstream>
#include <utility>

namespace axonn {
namespace {


// ---- Reading the files ----------------------------------------------------------------------------------------------

std::string read_tokenizer_file(std::filesystem::path const& path) {
    return read_input_file(path, "GPT-2 tokenizer file", "run scripts/fetch-tokenizer (or set AXONN_GPT2_DIR to a "
                           "folder holding encoder.json and vocab.bpe)", std::uint64_t{64} << 20);
}

template <typename... Args>
[[noreturn]] void fail_corrupt_gpt2_file(std::filesystem::path const& path, fmt::format_string<Args...> detail,
                               Args&&... args) {
    fail("GPT-2 tokenizer file {} is corrupt ({}): run scripts/fetch-tokenizer to fetch it again", path.string(),
         fmt::format(detail, std::forward<Args>(args)...));
}

// encoder.json: {"<spelled token>": id, ...}; ids must be exactly 0..n-1.
std::vector<std::string> read_encoder(std::filesystem::path const& path, ByteSpelling const& spelling) {
    std::string const text = read_tokenizer_file(path);
    nlohmann::json json;
    try {
        json = parse_guarded_json(text, 1);
    } catch (Error const& error) {
        fail_corrupt_gpt2_file(path, "{}", error.what());
    }
    if (!json.is_object() || json.empty()) fail_corrupt_gpt2_file(path, "expected a non-empty JSON object");
    std::vector<std::string> tokens(json.size());
    std::vector<bool> seen(json.size(), false);
    for (auto const& [spelled, id] : json.items()) {
        if (!id.is_number_integer()) {
            fail_corrupt_gpt2_file(path, "the id of {} is not an integer", quoted_text(spelled));
        }
        auto const index = id.get<std::int64_t>();
        if (index < 0 || index >= static_cast<std::int64_t>(tokens.size()) || seen[index]) {
            fail_corrupt_gpt2_file(path, "id {} of {} is out of range or repeated", index, quoted_text(spelled));
        }
        auto raw = spelling.bytes(spelled);
        if (!raw) {
            fail_corrupt_gpt2_file(path, "token {} is not spelled in GPT-2's byte alphabet", quoted_text(spelled));
        }
        tokens[index] = std::move(*raw);
        seen[index] = true;
    }
    return tokens;
}

// vocab.bpe: "#version: 0.2", then one merge per line, "<left> <right>", best first: one merge making each token of
// encoder.json past the 256 bytes and <|endoftext|>. A file cut short at a line's end, or with a line repeated or
// replaced, reads as merges like any other, and its tokens would differ from GPT-2's without a word.
void read_merges(std::filesystem::path const& path, ByteSpelling const& spelling, Vocabulary const& vocabulary,
                 BytePairMerger& merger) {
    std::istringstream lines(read_tokenizer_file(path));
    std::string line;
    if (!std::getline(lines, line) || !line.starts_with("#version")) {
        fail_corrupt_gpt2_file(path, "the first line is not \"#version: ...\"");
    }
    std::vector<int> made_by_line(vocabulary.size(), 0);  // token id -> the line whose merge made it
    for (int line_number = 2; std::getline(lines, line); ++line_number) {
        if (line.empty()) continue;
        std::istringstream fields(line);
        std::string left_spelled, right_spelled, extra;
        if (!(fields >> left_spelled >> right_spelled) || (fields >> extra)) {
            fail_corrupt_gpt2_file(path, "line {} is not two tokens", line_number);
        }
        auto const left = spelling.bytes(left_spelled);
        auto const right = spelling.bytes(right_spelled);
        if (!left || !right) {
            fail_corrupt_gpt2_file(path, "line {} is not spelled in GPT-2's byte alphabet", line_number);
        }
        if (!merger.add_merge(*left, *right, vocabulary)) {
            fail_corrupt_gpt2_file(path, "line {} merges tokens that encoder.json lacks", line_number);
        }
        std::int32_t const made = find_token(vocabulary, *left + *right);
        if (made_by_line[made] != 0) {
            fail_corrupt_gpt2_file(path, "line {} makes the token {}, which line {} made already", line_number,
                                   quoted_text(left_spelled + right_spelled), made_by_line[made]);
        }
        made_by_line[made] = line_number;
    }
    std::size_t const merges_needed = vocabulary.size() - 257;
    if (merger.merge_count() != merges_needed) {
        fail_corrupt_gpt2_file(path,
                               "it holds {} merges, and encoder.json's {} tokens need {} (one for each token past the "
                               "256 bytes and {})",
                               merger.merge_count(), vocabulary.size(), merges_needed, gpt2_end_of_text);
    }
}

// ---- Pre-tokenisation -----------------------------------------------------------------------------------------------

// The end of the piece that starts at `begin`: the pattern's alternatives tried in order.
std::size_t gpt2_piece_end(std::string_view text, std::size_t begin) {
    // Contractions are case-sensitive in GPT-2: "SHE'S" ends with ', S.
    if (std::size_t const end = contraction_end(text, begin, LetterCase::exact)) return end;
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional leading space, then a run of one class.
    std::size_t const body = text[begin] == ' ' && begin + 1 < text.size() ? begin + 1 : begin;
    CharClass const kind = class_at(text, body);
    if (kind != CharClass::space) return run_end(text, body, kind);
    return whitespace_end(text, begin);
}

// ---- The tokenizer --------------------------------------------------------------------------------------------------

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
        if (auto const byte = BytePairMerger::missing_byte(vocabulary)) {
            fail_corrupt_gpt2_file(encoder_path, "no token for byte {}", *byte);
        }
        eot_id_ = find_token(vocabulary, gpt2_end_of_text);
        if (eot_id_ < 0) fail_corrupt_gpt2_file(encoder_path, "no {} token", gpt2_end_of_text);
        merger_ = BytePairMerger(vocabulary);
        read_merges(directory / "vocab.bpe", spelling, vocabulary, merger_);
    }

    std::vector<std::int32_t> encode(std::string_view text) const override {
        std::vector<std::int32_t> ids;
        ids.reserve(text.size() / 4);  // GPT-2 averages about four bytes of English per token
        PieceCache cache;
        append_piece_ids(text, gpt2_piece_end, [this](std::string_view piece) { return merger_.merge(piece); }, cache,
                         ids);
        return ids;
    }

    std::string decode(std::span<std::int32_t const> ids) const override {
        return decode_tokens(tokens_, ids, "GPT-2");
    }

    std::int32_t vocab_size() const override { return static_cast<std::int32_t>(tokens_.size()); }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return "gpt2"; }

private:
    std::vector<std::string> tokens_;  // id -> raw bytes
    BytePairMerger merger_;
    std::int32_t eot_id_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(std::filesystem::path const& gpt2_dir) {
    return std::make_unique<Gpt2Tokenizer>(gpt2_dir);
}

}  // namespace axonn
