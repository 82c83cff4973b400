#include "axonn/memorization/eval_documents.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/json_fields.h"
#include "axonn/core/json_lines.h"
#include "axonn/io/tokenizer.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace axonn {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A document is a flat object holding a flat list: nothing nests deeper.
constexpr int max_document_depth = 4;
// The largest document file read: far beyond any canary set; every rank parses it, at several times its size.
constexpr std::uint64_t max_document_file_bytes = std::uint64_t{64} << 20;
constexpr std::string_view document_example = R"({"tokens": [...]} or {"text": "..."})";

EvalDocument parse_document(json const& record, Tokenizer const* tokenizer, int vocab_size,
                            std::string const& no_tokenizer) {
    AXONN_REQUIRE(record.is_object() && (record.contains("tokens") || record.contains("text")),
                  "is not an object with \"tokens\" (a list of ids) or \"text\"");
    // Which one is the document would be a guess (the text was ignored).
    AXONN_REQUIRE(!(record.contains("tokens") && record.contains("text")),
                  "has both \"tokens\" and \"text\": give the document one way");
    EvalDocument document;
    if (record.contains("tokens")) {
        AXONN_REQUIRE(record["tokens"].is_array(), "\"tokens\" is not a list of token ids");
        for (json const& id : record["tokens"]) {
            AXONN_REQUIRE(id.is_number_integer() && id.get<std::int64_t>() >= 0 && id.get<std::int64_t>() < vocab_size,
                          "token {} is not an id of the model's vocabulary (0 to {})", id.dump(), vocab_size - 1);
            document.tokens.push_back(id.get<std::int32_t>());
        }
    } else {
        AXONN_REQUIRE(record["text"].is_string(), "\"text\" is not a string");
        // As `axonn prepare` refuses it: a NUL character is no text.
        AXONN_REQUIRE(record["text"].get<std::string>().find('\0') == std::string::npos,
                      "\"text\" holds a NUL character (\\u0000), which no text holds: remove it");
        AXONN_REQUIRE(tokenizer != nullptr, "has \"text\" but {}", no_tokenizer);
        document.tokens = tokenizer->encode(record["text"].get<std::string>());
        for (std::int32_t id : document.tokens) {
            AXONN_REQUIRE(id < vocab_size,
                          "its text encodes to token {}, beyond the model's vocabulary of {}: pass the "
                          "--tokenizer the model was trained with",
                          id, vocab_size);
        }
    }
    if (record.contains("repetitions")) {
        nlohmann::json const& repetitions = record["repetitions"];
        AXONN_REQUIRE(repetitions.is_number_integer() && repetitions.get<std::int64_t>() >= 0 &&
                          repetitions.get<std::int64_t>() <= 1'000'000'000,
                      "\"repetitions\" is {}, not a count from 0 to 1000000000",
                      repetitions.is_number() ? repetitions.dump() : json_kind(repetitions));
        document.repetitions = repetitions.get<int>();
    }
    return document;
}

}  // namespace

std::vector<EvalDocument> read_eval_documents(fs::path const& path, Tokenizer const* tokenizer, int vocab_size,
                                              std::string const& no_tokenizer) {
    std::string const text =
        read_input_file(path, "document file", "pass a JSON-lines file of documents", max_document_file_bytes);
    std::vector<EvalDocument> documents;
    for_each_json_line(path, text, {max_document_depth, max_document_file_bytes, document_example},
                       [&](json const& record) {
                           documents.push_back(parse_document(record, tokenizer, vocab_size, no_tokenizer));
                       });
    AXONN_REQUIRE(!documents.empty(), "{} holds no document: write one JSON object per line, {}", path.string(),
                  document_example);
    return documents;
}

}  // namespace axonn
