// Deterministic, resumable batches from token shards.
// The shards (a file, or every *.bin in a folder, in name order) form one token stream. Batch i takes B
// windows of T+1 consecutive tokens: inputs are the first T, targets the last T (shifted by one). Each window
// starts T tokens after the previous one, and the stream wraps to its start at the end of an epoch, so the batch
// sequence depends only on the data and (B, T). The position is the whole state: saving and restoring it
// resumes the exact same sequence of batches. Shards with a loss mask (fine-tuning data) give each target the mask
// of its token, so that a prompt token never counts as a target; shards without one count every target.
#pragma once

#include "axonn/io/token_shard.h"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace axonn {

struct DataLoaderState {
    std::int64_t position = 0;  // index of the next token in the concatenated stream
    std::int64_t epoch = 0;
};

class DataLoader {
public:
    // Opens and validates every shard: its recorded tokenizer, if any, must be `tokenizer`, and its token ids
    // must lie below tokenizer.vocab_size. B·T+1 tokens must fit in the data.
    DataLoader(std::filesystem::path const& path, int batch, int seq, ShardTokenizer const& tokenizer);

    // tokens[B,T] and targets[B,T] of the next batch, and, if loss_mask is given, loss_mask[B,T]: 1 where the
    // target counts in the loss (the mask of token t+1 for target t), else 0.
    void next_batch(std::int32_t* tokens, std::int32_t* targets, float* loss_mask = nullptr);

    std::int64_t total_tokens() const { return total_tokens_; }
    std::size_t shard_count() const { return shards_.size(); }
    std::vector<TokenShard> const& shards() const { return shards_; }
    // Whether any shard carries a loss mask: only then does a batch's mask hold zeros.
    bool has_loss_mask() const;
    // How many tokens of the stream count in the loss (total_tokens() without a mask).
    std::int64_t loss_tokens() const;
    DataLoaderState state() const { return state_; }
    void restore(DataLoaderState const& state);

private:
    template <typename T, typename Read>
    void read_stream(std::int64_t position, std::int64_t count, T* out, Read read) const;

    std::vector<TokenShard> shards_;
    std::vector<std::int64_t> shard_starts_;  // position of each shard's first token in the stream
    std::int64_t total_tokens_ = 0;
    int batch_;
    int seq_;
    DataLoaderState state_;
    std::vector<std::int32_t> window_;
    std::vector<std::uint8_t> window_mask_;
};

// The shard files a --data path names: the file itself, or the *.bin files of a folder in name order, except
// val.bin: a folder's validation shard is never trained on.
std::vector<std::filesystem::path> shard_paths(std::filesystem::path const& path);

// The name a folder's validation shard has, beside its training shards, and `axonn prepare`'s training shard.
inline constexpr char const* validation_shard_name = "val.bin";
inline constexpr char const* training_shard_name = "train.bin";

}  // namespace axonn
