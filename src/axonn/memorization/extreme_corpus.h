// The extreme-repetition experiment's text: Jane Austen's novels to pretrain on (their last 5% validate), and
// entries of Ambrose Bierce's The Devil's Dictionary as the documents a model is then fine-tuned on for many epochs,
// with as many entries of the same kind that it never sees (the membership attack's non-members and the chance
// level of extraction). Only distinct entries of at least 70 words qualify: every word is at least one token under either
// tokenizer, so each document is at least 65 tokens long whichever tokenizes it.
//
// Two tokenizations of the same text:
//   "words":  the study's word vocabulary (real_text.h): the novels' most frequent words and punctuation, other
//             words spelled in bytes;
//   "llama3": Llama 3's tokenizer, its ids compacted to those the text uses (the model's embedding holds a row for
//             each of them only, not for all 128,256: the rest would never be trained or read).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct ExtremeTextSource {
    std::string austen;                      // the six novels as one text
    std::vector<std::string> documents;      // the entries trained on
    std::vector<std::string> unseen;         // entries of the same kind never trained on
};

// Reads both corpora and draws `documents` + `unseen` distinct qualifying entries in an order from `seed`. Too few
// qualifying entries, or missing files, are an axonn::Error naming the fix.
ExtremeTextSource read_extreme_text(std::filesystem::path const& devil_folder,
                                    std::filesystem::path const& austen_package, int documents, int unseen,
                                    std::uint64_t seed);

// One tokenization of the source.
struct ExtremeTokens {
    std::string tokenizer;  // "words" or "llama3"
    int vocab = 0;          // the model's vocabulary
    std::vector<std::int32_t> train, validation;
    std::vector<std::vector<std::int32_t>> documents, unseen;
    std::string describe() const;
};

ExtremeTokens word_tokens(ExtremeTextSource const& source, int words);
// llama3_dir holds Llama 3's tokenizer.json (scripts/fetch-tokenizer).
ExtremeTokens llama3_tokens(ExtremeTextSource const& source, std::filesystem::path const& llama3_dir);

}  // namespace axonn
