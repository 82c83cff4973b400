// `axonn prepare`: turns text files into the train.bin and val.bin token shards that training reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace axonn {

struct PrepareOptions {
    std::vector<std::filesystem::path> inputs;  // text files, one document each
    std::filesystem::path out_dir;              // created if missing
    std::string tokenizer = "gpt2";             // "gpt2" or "byte"
    std::filesystem::path gpt2_dir;             // empty: default_gpt2_dir()
    double val_fraction = 0.1;                  // in (0, 1)
};

struct PrepareReport {
    std::int64_t train_tokens;
    std::int64_t val_tokens;
    std::filesystem::path train_path, val_path;
};

// Tokenizes each document and splits it: the first (1 - val_fraction) of its tokens go to training and the rest
// to validation (at least one token each side when it has two), so every document is represented in both and
// neither set sees text from the other. Each part is followed by the end-of-text token, so documents stay
// delimited in both shards: train_tokens + val_tokens = the documents' token counts + 2 per document. Shards are
// 16-bit when the vocabulary fits, else 32-bit. progress, if given, gets the fraction of input bytes done.
PrepareReport prepare_shards(PrepareOptions const& options, std::function<void(double)> const& progress = {});

}  // namespace axonn
