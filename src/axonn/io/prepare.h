// `axonn prepare`: turns text files, or JSON lines of fine-tuning records, into the train.bin and val.bin token
// shards that training reads.
#pragma once

#include "axonn/io/prompt_records.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace axonn {

struct PrepareOptions {
    std::vector<std::filesystem::path> inputs;  // text files, one document each; or JSON-lines files of records
    std::filesystem::path out_dir;              // created if missing
    std::string tokenizer = "gpt2";             // a name or folder that make_tokenizer takes
    std::filesystem::path gpt2_dir;             // empty: default_gpt2_dir()
    double val_fraction = 0.1;                  // in (0, 1)
    bool allow_binary = false;                  // accept inputs that are not UTF-8 text (NUL bytes, invalid UTF-8)
    std::string format = "text";                // "text" or "jsonl" (prompt and response records, prompt_records.h)
    RecordFields fields;                        // jsonl: where a record holds its prompt and its response
    std::string prompt_template = "plain";      // jsonl: "plain", "alpaca" or "llama3"
    bool overwrite = false;                     // replace the train.bin and val.bin of an earlier run in out_dir
};

struct PrepareReport {
    std::int64_t train_tokens;
    std::int64_t val_tokens;
    std::filesystem::path train_path, val_path;
    std::vector<std::filesystem::path> skipped;  // inputs that are this command's own outputs
    // jsonl: the records in each shard and how many of its tokens count in the loss (the responses and their
    // end-of-text).
    std::int64_t train_records = 0, val_records = 0;
    std::int64_t train_loss_tokens = 0, val_loss_tokens = 0;
};

// Tokenizes each document and splits it: the first (1 - val_fraction) of its tokens go to training and the rest
// to validation (at least one token each side when it has two), so every document is represented in both and
// neither set sees text from the other. Each part is followed by the end-of-text token, so documents stay
// delimited in both shards: train_tokens + val_tokens = the documents' token counts + 2 per document. Shards are
// 16-bit when the vocabulary fits, else 32-bit, and record the tokenizer and one dataset id shared by the pair.
// Both are written and flushed beside their destinations before either is renamed into place, so a failure while
// writing (a full disk) leaves the previous pair as it was; a crash between the two renames leaves a pair whose
// dataset ids differ, which training refuses.
// Inputs must be text files; token shards and the output folder's own files (as `--input dir/*` names them) are
// skipped, and anything else that is not UTF-8 text is refused unless allow_binary.
// With format "jsonl", each input holds records instead (prompt_records.h): a seeded shuffle of all the records
// (the same for the same inputs) sends round(val_fraction x records) of them to validation, at least one, and the
// rest to training, each shard keeping the records' order; both shards carry the loss mask. At least two records
// are needed.
// progress, if given, gets the fraction of input bytes done.
// The options alone (tokenizer name, fraction); a problem is an axonn::UsageError. prepare_shards calls it.
void validate_prepare_options(PrepareOptions const& options);

PrepareReport prepare_shards(PrepareOptions const& options, std::function<void(double)> const& progress = {});

}  // namespace axonn
