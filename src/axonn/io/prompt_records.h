// Fine-tuning records for `axonn prepare --format jsonl`: JSON lines, each an object with a prompt and a response
// (strings, under configurable field names). A record becomes the tokens of its prompt part, which the loss
// ignores (mask 0), then those of its response part and end-of-text, which it counts (mask 1): the model learns
// to answer and to stop, never to write prompts. The two parts are tokenized separately, so the boundary between
// masked and counted tokens is exactly where the response starts (a BPE merge across it cannot blur it).
//
// Templates put the record's text into a format:
//   plain   the prompt, then the response, as they are
//   alpaca  Stanford Alpaca's instruction format: a preamble, "### Instruction:\n{prompt}\n\n### Response:\n",
//           then the response
//   llama3  Llama 3's chat format written with its special-token strings: "<|begin_of_text|><|start_header_id|>
//           user<|end_header_id|>\n\n{prompt}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", then
//           "{response}<|eot_id|>". Meant for the Llama 3 tokenizer ("llama3"), which reads each of those strings
//           as one special id; GPT-2's encodes them as plain text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

class Tokenizer;

enum class PromptTemplate { plain, alpaca, llama3 };

// "plain", "alpaca" or "llama3"; anything else is an axonn::UsageError naming the three.
PromptTemplate parse_prompt_template(std::string_view name);

struct RecordFields {
    std::string prompt = "prompt";
    std::string response = "response";
};

struct PromptRecord {
    std::string prompt, response;
};

// The records of `text`, the contents of the JSON-lines file `path`. A line that is not JSON, too long or too
// deep, not an object, or without a string under each field is an axonn::Error naming the file, the line and
// the fix; so is a file without a record.
std::vector<PromptRecord> parse_prompt_records(std::filesystem::path const& path, std::string_view text,
                                               RecordFields const& fields);

// A record's text under a template: the part the loss ignores and the part it counts.
struct TemplatedRecord {
    std::string prompt_part, response_part;
};
TemplatedRecord apply_template(PromptTemplate format, PromptRecord const& record);

// Tokens with one loss-mask value each (1: the token counts as a target).
struct MaskedTokens {
    std::vector<std::int32_t> tokens;
    std::vector<std::uint8_t> loss_mask;

    void append(std::span<std::int32_t const> ids, std::uint8_t mask);
    void append(MaskedTokens const& other);
};

// The prompt part's tokens (mask 0), the response part's and end-of-text (mask 1).
MaskedTokens tokenize_record(Tokenizer const& tokenizer, TemplatedRecord const& record);

}  // namespace axonn
