// Tokenizers turn text into the token ids the model trains on and back.
//   "gpt2": OpenAI's GPT-2 byte-level BPE (50,257 ids, <|endoftext|> = 50256), read from encoder.json and
//           vocab.bpe, so that ids, and the data prepared with them, match every other GPT-2 implementation.
//   "byte": one id per byte (0..255) plus end-of-text (256); needs no files, for tests and tiny experiments.
// Both are lossless: decode(encode(text)) == text for any bytes, valid UTF-8 or not. encode() treats the text
// "<|endoftext|>" as plain text, as GPT-2's encoder does; callers that want a document boundary append eot_id().
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
    // Every id must lie in [0, vocab_size()); end-of-text decodes to "<|endoftext|>".
    virtual std::string decode(std::span<std::int32_t const> ids) const = 0;
    virtual std::int32_t vocab_size() const = 0;
    virtual std::int32_t eot_id() const = 0;
    virtual std::string name() const = 0;
};

// kind is "gpt2" (files from gpt2_dir) or "byte" (gpt2_dir unused).
std::unique_ptr<Tokenizer> make_tokenizer(std::string const& kind, std::filesystem::path const& gpt2_dir);
// Throws axonn::Error unless kind names a tokenizer.
void check_tokenizer_name(std::string const& kind);

std::unique_ptr<Tokenizer> make_byte_tokenizer();
// Reads gpt2_dir/encoder.json and gpt2_dir/vocab.bpe.
std::unique_ptr<Tokenizer> make_gpt2_tokenizer(std::filesystem::path const& gpt2_dir);

// $AXONN_GPT2_DIR if set, else the copy that scripts/fetch-tokenizer puts in the source tree.
std::filesystem::path default_gpt2_dir();

}  // namespace axonn
