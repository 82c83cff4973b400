// Reading fine-tuning records and tokenizing them with their loss mask (see prompt_records.h).
#include "axonn/io/prompt_records.h"

#include "axonn/core/error.h"
#include "axonn/core/json_fields.h"
#include "axonn/core/json_lines.h"
#include "axonn/io/tokenizer.h"

#include <nlohmann/json.hpp>

namespace axonn {
namespace {

// A record is a flat object of strings; a little room for metadata fields the records may carry besides.
constexpr int max_record_depth = 8;
constexpr std::size_t max_record_bytes = std::size_t{16} << 20;

constexpr std::string_view alpaca_preamble =
    "Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n";
constexpr std::string_view alpaca_response_header = "\n\n### Response:\n";
constexpr std::string_view llama3_user_header = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n";
constexpr std::string_view llama3_assistant_header =
    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
constexpr std::string_view llama3_end_of_turn = "<|eot_id|>";

std::string string_field(nlohmann::json const& record, std::string const& field, std::string_view option) {
    AXONN_REQUIRE(record.contains(field),
                  "the record has no \"{}\" field: add it, or name the field that holds it with "
                  "{}",
                  field, option);
    AXONN_REQUIRE(record[field].is_string(), "the record's \"{}\" is {}, not a string: write it as a JSON string",
                  field, json_kind(record[field]));
    std::string text = record[field].get<std::string>();
    // As a text file's NUL byte is refused (binary, not text), so is one written as \u0000.
    AXONN_REQUIRE(text.find('\0') == std::string::npos,
                  "the record's \"{}\" holds a NUL character (\\u0000), which no text holds: remove it", field);
    return text;
}

std::string concat(std::initializer_list<std::string_view> parts) {
    std::string text;
    for (std::string_view part : parts) text += part;
    return text;
}

}  // namespace

PromptTemplate parse_prompt_template(std::string_view name) {
    if (name == "plain") return PromptTemplate::plain;
    if (name == "alpaca") return PromptTemplate::alpaca;
    if (name == "llama3") return PromptTemplate::llama3;
    throw UsageError(fmt::format("unknown --template '{}': use plain, alpaca or llama3", name));
}

std::vector<PromptRecord> parse_prompt_records(std::filesystem::path const& path, std::string_view text,
                                               RecordFields const& fields) {
    std::string const example =
        fmt::format(R"({{"{}": "...", "{}": "..."}})", fields.prompt, fields.response);
    std::vector<PromptRecord> records;
    for_each_json_line(path, text, {max_record_depth, max_record_bytes, example}, [&](nlohmann::json const& record) {
        AXONN_REQUIRE(record.is_object(), "the line is {}, not an object: write one object per line, {}",
                      json_kind(record), example);
        records.push_back({string_field(record, fields.prompt, "--prompt-field"),
                           string_field(record, fields.response, "--response-field")});
    });
    AXONN_REQUIRE(!records.empty(), "{} holds no record: write one JSON object per line, {}", path.string(), example);
    return records;
}

TemplatedRecord apply_template(PromptTemplate format, PromptRecord const& record) {
    switch (format) {
        case PromptTemplate::plain: return {record.prompt, record.response};
        case PromptTemplate::alpaca:
            return {concat({alpaca_preamble, record.prompt, alpaca_response_header}), record.response};
        case PromptTemplate::llama3:
            return {concat({llama3_user_header, record.prompt, llama3_assistant_header}),
                    concat({record.response, llama3_end_of_turn})};
    }
    AXONN_INVARIANT(false, "unknown prompt template {}", static_cast<int>(format));
    return {};
}

void MaskedTokens::append(std::span<std::int32_t const> ids, std::uint8_t mask) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    loss_mask.insert(loss_mask.end(), ids.size(), mask);
}

void MaskedTokens::append(MaskedTokens const& other) {
    tokens.insert(tokens.end(), other.tokens.begin(), other.tokens.end());
    loss_mask.insert(loss_mask.end(), other.loss_mask.begin(), other.loss_mask.end());
}

MaskedTokens tokenize_record(Tokenizer const& tokenizer, TemplatedRecord const& record) {
    MaskedTokens masked;
    masked.append(tokenizer.encode(record.prompt_part), 0);
    masked.append(tokenizer.encode(record.response_part), 1);
    std::int32_t const end_of_text = tokenizer.eot_id();
    masked.append(std::span(&end_of_text, 1), 1);
    return masked;
}

}  // namespace axonn
