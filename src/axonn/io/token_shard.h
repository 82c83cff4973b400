// Token shards: the tokenized training and validation streams that `axonn prepare` writes and the data loader
// reads. A shard is read in place with pread(2), a window at a time, so opening one is instant whatever its size,
// every process of a run shares the same cached pages, and a shard that another program truncates or rewrites
// during a run is an error that names it (a memory map would crash the run with SIGBUS instead).
//
// Layout (little-endian):
//   header, 1024 bytes = 256 x int32:
//     [0] magic 0x41584E54 ("TNXA" on disk, "AXNT" read as an integer)
//     [1] version = 3 (version 1, without [5..15], and version 2, without [16], are still read: no loss mask)
//     [2] token count, low 32 bits
//     [3] token count, high 32 bits
//     [4] token width in bits, 16 or 32
//     [5] vocabulary size of the tokenizer that wrote it (0: not recorded)
//     [6] dataset id, low 32 bits   (a hash of the pair `axonn prepare` writes, both share it; 0: none)
//     [7] dataset id, high 32 bits
//     [8..15] the tokenizer's name, 32 bytes of ASCII padded with zeros ("gpt2", "byte")
//     [16] flags: bit 0 = the shard carries a loss mask; no other bit is defined
//     [17..255] zero
//   the tokens, count x uint16 or count x uint32
//   with flag bit 0: the loss mask, count x uint8, each 0 or 1: 1 where the token counts in the loss as a target
//     (a response token of a fine-tuning record), 0 where it does not (a prompt token). A shard without a mask
//     counts every token.
#pragma once

#include "axonn/core/file_io.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace axonn {

inline constexpr std::int32_t token_shard_magic = 0x41584E54;

// Whether a file's first four bytes are a token shard's magic.
inline bool starts_with_token_shard_magic(void const* first_bytes) {
    std::int32_t magic = 0;
    std::memcpy(&magic, first_bytes, sizeof magic);
    return magic == token_shard_magic;
}
inline constexpr std::int32_t token_shard_version = 3;
inline constexpr std::size_t token_shard_header_bytes = 1024;
inline constexpr std::size_t token_shard_max_tokenizer_name = 32;

// The tokenizer a shard was written with: its ids mean nothing under another.
struct ShardTokenizer {
    std::string name;
    std::int32_t vocab_size = 0;
    bool operator==(ShardTokenizer const&) const = default;
};

// Where a shard came from. An empty tokenizer name records nothing (for tests that write raw ids).
struct ShardOrigin {
    ShardTokenizer tokenizer;
    std::uint64_t dataset_id = 0;
};

// Writes `tokens` as a shard of `token_bits` (16 or 32) bits per token into `file`, which the caller commits
// (so that shards written together appear together). Every id must be non-negative and fit the width.
// `loss_mask`, if not empty, holds one 0 or 1 per token and is stored after the tokens.
void write_token_shard(AtomicFile& file, std::span<std::int32_t const> tokens, int token_bits,
                       ShardOrigin const& origin = {}, std::span<std::uint8_t const> loss_mask = {});
// The same into `path`, which appears complete or not at all.
void write_token_shard(std::filesystem::path const& path, std::span<std::int32_t const> tokens, int token_bits,
                       ShardOrigin const& origin = {}, std::span<std::uint8_t const> loss_mask = {});

class TokenShard {
public:
    // Opens and validates the file; every problem is an axonn::Error naming the file.
    static TokenShard open(std::filesystem::path const& path);

    std::int64_t size() const { return size_; }
    int token_bits() const { return token_bits_; }
    std::filesystem::path const& path() const { return file_.path; }
    // The tokenizer recorded in the header, if any (version 1 shards and raw test shards have none).
    std::optional<ShardTokenizer> const& tokenizer() const { return tokenizer_; }
    std::uint64_t dataset_id() const { return dataset_id_; }

    // out[i] = token offset + i for i in [0, count); the range must lie inside the shard, and the file must be
    // as it was when opened.
    void read(std::int64_t offset, std::int64_t count, std::int32_t* out) const;

    // The largest token id in the shard (-1 for an empty shard), so a loader can check it against the vocabulary.
    std::int32_t max_token() const { return max_token_; }

    bool has_loss_mask() const { return has_loss_mask_; }
    // How many tokens count in the loss: size() without a mask.
    std::int64_t loss_tokens() const { return loss_tokens_; }
    // out[i] = the loss mask of token offset + i (1 for every token of a shard without a mask); the range and the
    // file as for read().
    void read_loss_mask(std::int64_t offset, std::int64_t count, std::uint8_t* out) const;

private:
    explicit TokenShard(InputFile file);
    void check_unchanged() const;
    void check_range(std::int64_t offset, std::int64_t count, char const* what) const;
    void read_bytes(std::uint64_t first_byte, void* out, std::size_t bytes) const;
    void read_ids(std::int64_t offset, std::int64_t count, std::int32_t* out) const;
    void read_mask_bytes(std::int64_t offset, std::int64_t count, std::uint8_t* out) const;
    std::int32_t find_max_token() const;
    std::int64_t count_loss_tokens() const;

    InputFile file_;
    std::int64_t size_ = 0;
    int token_bits_ = 0;
    std::optional<ShardTokenizer> tokenizer_;
    std::uint64_t dataset_id_ = 0;
    std::int32_t max_token_ = -1;
    bool has_loss_mask_ = false;
    std::int64_t loss_tokens_ = 0;
};

}  // namespace axonn
