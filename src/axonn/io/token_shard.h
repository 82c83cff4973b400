// Token shards: the tokenized training and validation streams that `axonn prepare` writes and the data loader
// reads. A shard is read in place with pread(2), a window at a time, so opening one is instant whatever its size,
// every process of a run shares the same cached pages, and a shard that another program truncates or rewrites
// during a run is an error that names it (a memory map would crash the run with SIGBUS instead).
//
// Layout (little-endian):
//   header, 1024 bytes = 256 x int32:
//     [0] magic 0x41584E54 ("TNXA" on disk, "AXNT" read as an integer)
//     [1] version = 2 (version 1, without [5..15], is still read)
//     [2] token count, low 32 bits
//     [3] token count, high 32 bits
//     [4] token width in bits, 16 or 32
//     [5] vocabulary size of the tokenizer that wrote it (0: not recorded)
//     [6] dataset id, low 32 bits   (shards written together by one `axonn prepare` share it; 0: none)
//     [7] dataset id, high 32 bits
//     [8..15] the tokenizer's name, 32 bytes of ASCII padded with zeros ("gpt2", "byte")
//     [16..255] zero
//   the tokens, count x uint16 or count x uint32
#pragma once

#include "axonn/core/file_io.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace axonn {

inline constexpr std::int32_t token_shard_magic = 0x41584E54;
inline constexpr std::int32_t token_shard_version = 2;
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
void write_token_shard(AtomicFile& file, std::span<std::int32_t const> tokens, int token_bits,
                       ShardOrigin const& origin = {});
// The same into `path`, which appears complete or not at all.
void write_token_shard(std::filesystem::path const& path, std::span<std::int32_t const> tokens, int token_bits,
                       ShardOrigin const& origin = {});

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

private:
    explicit TokenShard(InputFile file);
    void check_unchanged() const;
    void read_ids(std::int64_t offset, std::int64_t count, std::int32_t* out) const;
    std::int32_t find_max_token() const;

    InputFile file_;
    std::int64_t size_ = 0;
    int token_bits_ = 0;
    std::optional<ShardTokenizer> tokenizer_;
    std::uint64_t dataset_id_ = 0;
    std::int32_t max_token_ = -1;
};

}  // namespace axonn
