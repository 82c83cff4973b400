// Fuzzes axonn::parse_prompt_records (src/axonn/io/prompt_records.cpp), the reader of `axonn prepare --format jsonl`
// fine-tuning records, then each record under every template, tokenized with the byte tokenizer.
//
// Input: the bytes of a JSON-lines file.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report, another exception
// escaping, or a tokenized record whose loss mask is not one value per token.
#include "axonn/core/error.h"
#include "axonn/io/prompt_records.h"
#include "axonn/io/tokenizer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    static std::unique_ptr<axonn::Tokenizer> const tokenizer = axonn::make_byte_tokenizer();
    std::string_view const text(reinterpret_cast<char const*>(data), size);
    try {
        for (axonn::PromptRecord const& record : axonn::parse_prompt_records("records.jsonl", text, {})) {
            for (auto const format :
                 {axonn::PromptTemplate::plain, axonn::PromptTemplate::alpaca, axonn::PromptTemplate::llama3}) {
                axonn::MaskedTokens const tokens =
                    axonn::tokenize_record(*tokenizer, axonn::apply_template(format, record));
                if (tokens.tokens.size() != tokens.loss_mask.size()) {
                    std::fprintf(stderr, "fuzz_prompt_records: %zu tokens, %zu mask values\n", tokens.tokens.size(),
                                 tokens.loss_mask.size());
                    std::abort();
                }
            }
        }
    } catch (axonn::Error const&) {
        // A one-line refusal naming the line: what a bad record should get.
    }
    return 0;
}
