// Token shards: the tokenized training and validation streams that `axonn prepare` writes and the data loader
// reads. A shard is memory-mapped rather than loaded, so opening one is instant whatever its size and every
// process of a run shares the same pages.
//
// Layout (little-endian):
//   header, 1024 bytes = 256 x int32:
//     [0] magic 0x41584E54 ("TNXA" on disk, "AXNT" read as an integer)
//     [1] version = 1
//     [2] token count, low 32 bits
//     [3] token count, high 32 bits
//     [4] token width in bits, 16 or 32
//     [5..255] zero
//   the tokens, count x uint16 or count x uint32
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace axonn {

inline constexpr std::int32_t token_shard_magic = 0x41584E54;
inline constexpr std::int32_t token_shard_version = 1;
inline constexpr std::size_t token_shard_header_bytes = 1024;

// Writes `tokens` as a shard of `token_bits` (16 or 32) bits per token. Every id must be non-negative and fit
// the width. The file appears complete or not at all: it is written beside `path` and renamed into place.
void write_token_shard(std::filesystem::path const& path, std::span<std::int32_t const> tokens, int token_bits);

class TokenShard {
public:
    // Maps the file read-only and validates it; every problem is an axonn::Error naming the file.
    static TokenShard open(std::filesystem::path const& path);

    std::int64_t size() const { return size_; }
    int token_bits() const { return token_bits_; }
    std::filesystem::path const& path() const { return path_; }

    // out[i] = token offset + i for i in [0, count); the range must lie inside the shard.
    void read(std::int64_t offset, std::int64_t count, std::int32_t* out) const;

    // The largest token id in the shard (-1 for an empty shard), so a loader can check it against the vocabulary.
    std::int32_t max_token() const { return max_token_; }

private:
    struct Unmap {
        std::size_t length = 0;
        void operator()(std::byte const* mapping) const;
    };
    using Mapping = std::unique_ptr<std::byte const, Unmap>;

    TokenShard(std::filesystem::path path, Mapping mapping, std::int64_t size, int token_bits);
    std::byte const* tokens() const { return mapping_.get() + token_shard_header_bytes; }
    std::int32_t find_max_token() const;

    std::filesystem::path path_;
    Mapping mapping_;
    std::int64_t size_ = 0;
    int token_bits_ = 0;
    std::int32_t max_token_ = -1;
};

}  // namespace axonn
