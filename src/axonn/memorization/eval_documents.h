// The documents `axonn memorization eval` scores: JSON lines, each {"tokens": [ids]} or {"text": "..."} with an
// optional "repetitions" (how often the document was trained on: the duplication bucket it is reported in). The
// file comes from the user: every line is checked, and a bad one is a one-line error naming the line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

class Tokenizer;

struct EvalDocument {
    std::vector<std::int32_t> tokens;
    int repetitions = -1;  // -1: not given
};

// Reads a JSON-lines document file; `tokenizer` encodes "text" records (null: a "text" record is an error that
// ends with `no_tokenizer`, why there is none), and every token id must lie below vocab_size. A bad line is an
// axonn::Error naming the file, the line and the fix; so is a file with no document.
std::vector<EvalDocument> read_eval_documents(std::filesystem::path const& path, Tokenizer const* tokenizer,
                                              int vocab_size,
                                              std::string const& no_tokenizer = "no tokenizer was given");

}  // namespace axonn
