// Writing token shards and reading them in place (layout in token_shard.h).
#include "axonn/io/token_shard.h"

#include "axonn/core/error.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace axonn {
namespace {

// The format is little-endian and 32-bit tokens are read as they lie, so a big-endian host would need byte swaps.
static_assert(std::endian::native == std::endian::little, "token shards are read in place as little-endian");

constexpr int header_words = static_cast<int>(token_shard_header_bytes / sizeof(std::int32_t));
constexpr int name_word = 8;
constexpr int flags_word = 16;
constexpr std::int32_t loss_mask_flag = 1;
constexpr char const* remake_hint = "re-run `axonn prepare` to rebuild it";
using Header = std::array<std::int32_t, header_words>;

std::int32_t low_word(std::uint64_t value) { return static_cast<std::int32_t>(value & 0xFFFFFFFFu); }
std::int32_t high_word(std::uint64_t value) { return static_cast<std::int32_t>(value >> 32); }
std::uint64_t join_words(std::int32_t low, std::int32_t high) {
    return static_cast<std::uint32_t>(low) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(high)) << 32);
}

Header make_header(std::int64_t count, int token_bits, ShardOrigin const& origin, bool loss_mask) {
    Header header{};
    header[0] = token_shard_magic;
    header[1] = token_shard_version;
    header[2] = low_word(static_cast<std::uint64_t>(count));
    header[3] = high_word(static_cast<std::uint64_t>(count));
    header[4] = token_bits;
    if (!origin.tokenizer.name.empty()) {
        header[5] = origin.tokenizer.vocab_size;
        std::memcpy(&header[name_word], origin.tokenizer.name.data(), origin.tokenizer.name.size());
    }
    header[6] = low_word(origin.dataset_id);
    header[7] = high_word(origin.dataset_id);
    header[flags_word] = loss_mask ? loss_mask_flag : 0;
    return header;
}

void check_origin(ShardOrigin const& origin) {
    ShardTokenizer const& tokenizer = origin.tokenizer;
    if (tokenizer.name.empty()) return;
    AXONN_INVARIANT(
        tokenizer.name.size() <= token_shard_max_tokenizer_name &&
            std::all_of(tokenizer.name.begin(), tokenizer.name.end(), [](char c) { return c > ' ' && c < 127; }),
        "tokenizer name '{}' does not fit a token shard's header", tokenizer.name);
    AXONN_INVARIANT(tokenizer.vocab_size > 0, "tokenizer {} has {} ids", tokenizer.name, tokenizer.vocab_size);
}

void check_tokens_fit(std::span<std::int32_t const> tokens, int token_bits, std::filesystem::path const& path) {
    AXONN_REQUIRE(token_bits == 16 || token_bits == 32, "token shard width must be 16 or 32 bits, not {}", token_bits);
    std::int64_t const limit = token_bits == 16 ? std::int64_t{1} << 16 : std::int64_t{1} << 31;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        AXONN_REQUIRE(tokens[i] >= 0 && tokens[i] < limit,
                      "cannot write token shard {}: token {} at position {} does not fit {} bits (ids must be 0..{})",
                      path.string(), tokens[i], i, token_bits, limit - 1);
    }
}

void check_loss_mask_fits(std::span<std::int32_t const> tokens, std::span<std::uint8_t const> loss_mask) {
    if (loss_mask.empty()) return;
    AXONN_INVARIANT(loss_mask.size() == tokens.size(), "a loss mask of {} values for {} tokens", loss_mask.size(),
                    tokens.size());
    AXONN_INVARIANT(std::all_of(loss_mask.begin(), loss_mask.end(), [](std::uint8_t v) { return v <= 1; }),
                    "a loss mask holds values other than 0 and 1");
}

void write_payload(AtomicFile& file, std::span<std::int32_t const> tokens, int token_bits) {
    if (token_bits == 32) {  // non-negative int32 and uint32 share their bytes
        file.write(tokens.data(), tokens.size_bytes());
        return;
    }
    constexpr std::size_t chunk = 1 << 20;
    std::vector<std::uint16_t> narrow;
    for (std::size_t first = 0; first < tokens.size(); first += chunk) {
        auto const part = tokens.subspan(first, std::min(chunk, tokens.size() - first));
        narrow.assign(part.begin(), part.end());
        file.write(narrow.data(), narrow.size() * sizeof(std::uint16_t));
    }
}

std::optional<ShardTokenizer> recorded_tokenizer(Header const& words, std::filesystem::path const& path) {
    if (words[1] < 2 || words[5] == 0) return std::nullopt;
    std::array<char, token_shard_max_tokenizer_name + 1> name{};
    std::memcpy(name.data(), &words[name_word], token_shard_max_tokenizer_name);
    ShardTokenizer tokenizer{name.data(), words[5]};
    AXONN_REQUIRE(tokenizer.vocab_size > 0 && !tokenizer.name.empty(),
                  "token shard {} is corrupt: its header records tokenizer '{}' with {} ids; {}", path.string(),
                  tokenizer.name, tokenizer.vocab_size, remake_hint);
    return tokenizer;
}

}  // namespace

void write_token_shard(AtomicFile& file, std::span<std::int32_t const> tokens, int token_bits,
                       ShardOrigin const& origin, std::span<std::uint8_t const> loss_mask) {
    check_origin(origin);
    check_tokens_fit(tokens, token_bits, file.destination());
    check_loss_mask_fits(tokens, loss_mask);
    Header const header = make_header(static_cast<std::int64_t>(tokens.size()), token_bits, origin, !loss_mask.empty());
    file.write(header.data(), sizeof(header));
    write_payload(file, tokens, token_bits);
    if (!loss_mask.empty()) file.write(loss_mask.data(), loss_mask.size());
}

void write_token_shard(std::filesystem::path const& path, std::span<std::int32_t const> tokens, int token_bits,
                       ShardOrigin const& origin, std::span<std::uint8_t const> loss_mask) {
    AtomicFile file(path, "token shard");
    write_token_shard(file, tokens, token_bits, origin, loss_mask);
    file.commit();
}

TokenShard::TokenShard(InputFile file) : file_(std::move(file)) {
    auto const bytes = static_cast<std::uint64_t>(file_.info.st_size);
    std::string const name = file_.path.string();
    AXONN_REQUIRE(bytes >= token_shard_header_bytes,
                  "token shard {} is truncated: {} bytes is shorter than the {}-byte header; {}", name, bytes,
                  token_shard_header_bytes, remake_hint);
    Header words{};
    read_exactly(file_, 0, words.data(), sizeof(words), "token shard");
    AXONN_REQUIRE(words[0] == token_shard_magic,
                  "{} is not an axonn token shard (magic 0x{:08X}, expected 0x{:08X}): {}", name,
                  static_cast<std::uint32_t>(words[0]), token_shard_magic, remake_hint);
    AXONN_REQUIRE(words[1] >= 1 && words[1] <= token_shard_version,
                  "token shard {} has unsupported version {} (this build reads 1 to {}): {}", name, words[1],
                  token_shard_version, remake_hint);
    std::int32_t const flags = words[1] >= 3 ? words[flags_word] : 0;
    AXONN_REQUIRE((flags & ~loss_mask_flag) == 0,
                  "token shard {} is corrupt: its header has unknown flags 0x{:08X}; {}", name,
                  static_cast<std::uint32_t>(flags), remake_hint);
    has_loss_mask_ = (flags & loss_mask_flag) != 0;
    token_bits_ = words[4];
    AXONN_REQUIRE(token_bits_ == 16 || token_bits_ == 32,
                  "token shard {} is corrupt: token width {} bits is neither 16 nor 32; {}", name, token_bits_,
                  remake_hint);
    std::uint64_t const count = join_words(words[2], words[3]);
    // 128 bits so that a garbage count cannot overflow the expected size into a match.
    unsigned __int128 const expected_bytes =
        token_shard_header_bytes +
        static_cast<unsigned __int128>(count) * static_cast<unsigned>(token_bits_ / 8 + (has_loss_mask_ ? 1 : 0));
    AXONN_REQUIRE(
        expected_bytes == bytes,
        "token shard {} is truncated or corrupt: its header promises {} tokens{} ({} bytes) but the file has {} "
        "bytes; {}",
        name, count, has_loss_mask_ ? " and their loss mask" : "", expected_bytes, bytes, remake_hint);
    size_ = static_cast<std::int64_t>(count);
    tokenizer_ = recorded_tokenizer(words, file_.path);
    dataset_id_ = words[1] >= 2 ? join_words(words[6], words[7]) : 0;
    max_token_ = find_max_token();
    loss_tokens_ = count_loss_tokens();
}

TokenShard TokenShard::open(std::filesystem::path const& path) {
    return TokenShard(open_input_file(path, "token shard", "check the path or run `axonn prepare` to create it"));
}

void TokenShard::check_unchanged() const {
    struct stat now {};
    bool const same = ::fstat(file_.handle.get(), &now) == 0 && now.st_size == file_.info.st_size &&
                      now.st_mtim.tv_sec == file_.info.st_mtim.tv_sec &&
                      now.st_mtim.tv_nsec == file_.info.st_mtim.tv_nsec;
    AXONN_REQUIRE(same,
                  "token shard {} changed while this run was reading it (its size or modification time is not what "
                  "it was when opened): restore it, or start the run again to use the new data",
                  file_.path.string());
}

void TokenShard::read_bytes(std::uint64_t first_byte, void* out, std::size_t bytes) const {
    try {
        read_exactly(file_, first_byte, out, bytes, "token shard");
    } catch (Error const&) {
        check_unchanged();  // a file cut short while being read: say that it changed
        throw;
    }
}

void TokenShard::read_ids(std::int64_t offset, std::int64_t count, std::int32_t* out) const {
    auto const first_byte = token_shard_header_bytes + static_cast<std::uint64_t>(offset) * (token_bits_ / 8);
    if (token_bits_ == 32) {
        read_bytes(first_byte, out, static_cast<std::size_t>(count) * 4);
        return;
    }
    std::vector<std::uint16_t> narrow(static_cast<std::size_t>(count));
    read_bytes(first_byte, narrow.data(), narrow.size() * 2);
    std::copy(narrow.begin(), narrow.end(), out);
}

void TokenShard::check_range(std::int64_t offset, std::int64_t count, char const* what) const {
    AXONN_INVARIANT(offset >= 0 && count >= 0 && offset <= size_ && count <= size_ - offset,
                    "cannot read the {} of tokens [{}, {}) from token shard {}: it holds {} tokens", what, offset,
                    offset + count, file_.path.string(), size_);
}

void TokenShard::read(std::int64_t offset, std::int64_t count, std::int32_t* out) const {
    check_range(offset, count, "ids");
    if (count == 0) return;
    check_unchanged();
    read_ids(offset, count, out);
}

void TokenShard::read_mask_bytes(std::int64_t offset, std::int64_t count, std::uint8_t* out) const {
    read_bytes(token_shard_header_bytes + static_cast<std::uint64_t>(size_) * (token_bits_ / 8) +
                   static_cast<std::uint64_t>(offset),
               out, static_cast<std::size_t>(count));
}

void TokenShard::read_loss_mask(std::int64_t offset, std::int64_t count, std::uint8_t* out) const {
    check_range(offset, count, "loss mask");
    if (!has_loss_mask_) {
        std::fill_n(out, count, std::uint8_t{1});
        return;
    }
    if (count == 0) return;
    check_unchanged();
    read_mask_bytes(offset, count, out);
}

namespace {

// Reads the whole shard into `buffer` a chunk at a time, with read(first, count, buffer), and calls
// visit(first, count) after each: a scan of a shard of any size in little memory.
template <typename T, typename Read, typename Visit>
void scan_in_chunks(std::int64_t size, std::vector<T>& buffer, Read read, Visit visit) {
    constexpr std::int64_t chunk = 1 << 20;
    buffer.resize(static_cast<std::size_t>(std::min(chunk, size)));
    for (std::int64_t first = 0; first < size; first += chunk) {
        std::int64_t const count = std::min(chunk, size - first);
        read(first, count, buffer.data());
        visit(first, count);
    }
}

}  // namespace

std::int32_t TokenShard::find_max_token() const {
    std::vector<std::int32_t> ids;
    std::uint32_t largest = 0;
    scan_in_chunks(
        size_, ids, [this](std::int64_t first, std::int64_t count, std::int32_t* out) { read_ids(first, count, out); },
        [&](std::int64_t, std::int64_t count) {
            for (std::int64_t i = 0; i < count; ++i) largest = std::max(largest, static_cast<std::uint32_t>(ids[i]));
        });
    AXONN_REQUIRE(largest <= static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max()),
                  "token shard {} is corrupt: it holds token id {}, beyond any vocabulary; {}", file_.path.string(),
                  largest, remake_hint);
    return size_ == 0 ? -1 : static_cast<std::int32_t>(largest);
}

// Counts the mask's ones, refusing any value but 0 and 1, so that a loader can trust every mask it reads.
std::int64_t TokenShard::count_loss_tokens() const {
    if (!has_loss_mask_) return size_;
    std::vector<std::uint8_t> mask;
    std::int64_t ones = 0;
    scan_in_chunks(
        size_, mask,
        [this](std::int64_t first, std::int64_t count, std::uint8_t* out) { read_mask_bytes(first, count, out); },
        [&](std::int64_t first, std::int64_t count) {
            for (std::int64_t i = 0; i < count; ++i) {
                std::uint8_t const value = mask[static_cast<std::size_t>(i)];
                AXONN_REQUIRE(value <= 1, "token shard {} is corrupt: the loss mask of token {} is {}, not 0 or 1; {}",
                              file_.path.string(), first + i, value, remake_hint);
                ones += value;
            }
        });
    return ones;
}

}  // namespace axonn
