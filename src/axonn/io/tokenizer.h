// Tokenizers turn text into the token ids the model trains on and back.
//   "gpt2": OpenAI's GPT-2 byte-level BPE (50,257 ids, <|endoftext|> = 50256), read from encoder.json and
//           vocab.bpe, so that ids, and the data prepared with them, match every other GPT-2 implementation.
//   "llama3": Llama 3's byte-level BPE (128,256 ids), read from a Hugging Face tokenizer.json
//           (llama3_tokenizer.cpp), with the same ids as Hugging Face's tokenizers. Its end of text is
//           <|end_of_text|> (128001), which ends Llama 3's pretraining documents (the chat models end a turn with
//           <|eot_id|>, 128009, which stays an ordinary special token here). A folder holding a tokenizer.json
//           of the same kind names such a tokenizer too.
//   "byte": one id per byte (0..255) plus end-of-text (256); needs no files, for tests and tiny experiments.
// All are lossless: decode(encode(text)) == text for any bytes, valid UTF-8 or not. GPT-2's encode() treats the
// text "<|endoftext|>" as plain text, as GPT-2's encoder does; Llama 3's turns its special tokens
// ("<|begin_of_text|>", "<|eot_id|>", ...) written in the text into their ids, as Hugging Face's does. Neither
// adds a token of its own: callers that want a document boundary append eot_id().
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// GPT-2's end-of-text token as text, which the byte tokenizer spells the same way.
inline constexpr std::string_view gpt2_end_of_text = "<|endoftext|>";

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
    // Every id must lie in [0, vocab_size()); a special token decodes to its text ("<|endoftext|>").
    virtual std::string decode(std::span<std::int32_t const> ids) const = 0;
    virtual std::int32_t vocab_size() const = 0;
    virtual std::int32_t eot_id() const = 0;
    virtual std::string name() const = 0;
};

// kind is "gpt2" (files from gpt2_dir), "llama3" (files from default_llama3_dir()), "byte", or a folder holding a
// tokenizer.json like Llama 3's (the names win over folders of the same name).
std::unique_ptr<Tokenizer> make_tokenizer(std::string const& kind, std::filesystem::path const& gpt2_dir);
// Throws axonn::Error unless kind names a tokenizer or a folder holding a tokenizer.json.
void check_tokenizer_name(std::string const& kind);

std::unique_ptr<Tokenizer> make_byte_tokenizer();
// Reads gpt2_dir/encoder.json and gpt2_dir/vocab.bpe.
std::unique_ptr<Tokenizer> make_gpt2_tokenizer(std::filesystem::path const& gpt2_dir);
// Reads directory/tokenizer.json.
std::unique_ptr<Tokenizer> make_llama3_tokenizer(std::filesystem::path const& directory);

// $AXONN_GPT2_DIR if set, else the copy that scripts/fetch-tokenizer puts in the source tree.
std::filesystem::path default_gpt2_dir();
// $AXONN_LLAMA3_DIR if set, else the copy that scripts/fetch-tokenizer puts in the source tree.
std::filesystem::path default_llama3_dir();

}  // namespace axonn
