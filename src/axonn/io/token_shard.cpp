// Writing token shards and reading them through a read-only memory mapping (layout in token_shard.h).
#include "axonn/io/token_shard.h"

#include "axonn/core/error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

namespace axonn {
namespace {

// The format is little-endian and the tokens are read in place, so a big-endian host would need byte swaps.
static_assert(std::endian::native == std::endian::little, "token shards are read in place as little-endian");

constexpr int header_words = static_cast<int>(token_shard_header_bytes / sizeof(std::int32_t));
constexpr char const* remake_hint = "re-run `axonn prepare` to rebuild it";

std::array<std::int32_t, header_words> make_header(std::int64_t count, int token_bits) {
    std::array<std::int32_t, header_words> header{};
    header[0] = token_shard_magic;
    header[1] = token_shard_version;
    header[2] = static_cast<std::int32_t>(static_cast<std::uint64_t>(count) & 0xFFFFFFFFu);
    header[3] = static_cast<std::int32_t>(static_cast<std::uint64_t>(count) >> 32);
    header[4] = token_bits;
    return header;
}

void check_token_bits(int token_bits) {
    require(token_bits == 16 || token_bits == 32, "token shard width must be 16 or 32 bits, not {}", token_bits);
}

void check_tokens_fit(std::span<std::int32_t const> tokens, int token_bits, std::filesystem::path const& path) {
    std::int64_t const limit = token_bits == 16 ? std::int64_t{1} << 16 : std::int64_t{1} << 31;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        require(tokens[i] >= 0 && tokens[i] < limit,
                "cannot write token shard {}: token {} at position {} does not fit {} bits (ids must be 0..{})",
                path.string(), tokens[i], i, token_bits, limit - 1);
    }
}

void write_payload(std::ofstream& out, std::span<std::int32_t const> tokens, int token_bits) {
    if (token_bits == 32) {  // non-negative int32 and uint32 share their bytes
        out.write(reinterpret_cast<char const*>(tokens.data()), static_cast<std::streamsize>(tokens.size_bytes()));
        return;
    }
    std::vector<std::uint16_t> narrow(tokens.begin(), tokens.end());
    out.write(reinterpret_cast<char const*>(narrow.data()),
              static_cast<std::streamsize>(narrow.size() * sizeof(std::uint16_t)));
}

// Closes a POSIX file descriptor on every path out of TokenShard::open.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(FileDescriptor const&) = delete;
    FileDescriptor& operator=(FileDescriptor const&) = delete;
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

private:
    int fd_;
};

FileDescriptor open_for_reading(std::filesystem::path const& path) {
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int const error = errno;
        require(error != ENOENT, "token shard {} does not exist: check the path or run `axonn prepare` to create it",
                path.string());
        fail("cannot open token shard {}: {}", path.string(), std::strerror(error));
    }
    return FileDescriptor(fd);
}

std::uint64_t file_bytes(FileDescriptor const& file, std::filesystem::path const& path) {
    struct stat info {};
    require(::fstat(file.get(), &info) == 0, "cannot read the size of token shard {}: {}", path.string(),
            std::strerror(errno));
    require(S_ISREG(info.st_mode), "token shard {} is not a regular file: check the path", path.string());
    return static_cast<std::uint64_t>(info.st_size);
}

struct Header {
    std::int64_t count = 0;
    int token_bits = 0;
};

Header parse_header(std::byte const* bytes, std::uint64_t actual_bytes, std::filesystem::path const& path) {
    std::array<std::int32_t, header_words> words{};
    std::memcpy(words.data(), bytes, token_shard_header_bytes);
    require(words[0] == token_shard_magic, "{} is not an axonn token shard (magic 0x{:08X}, expected 0x{:08X}): {}",
            path.string(), static_cast<std::uint32_t>(words[0]), token_shard_magic, remake_hint);
    require(words[1] == token_shard_version, "token shard {} has unsupported version {} (this build reads {}): {}",
            path.string(), words[1], token_shard_version, remake_hint);
    int const token_bits = words[4];
    require(token_bits == 16 || token_bits == 32,
            "token shard {} is corrupt: token width {} bits is neither 16 nor 32; {}", path.string(), token_bits,
            remake_hint);
    std::uint64_t const count = static_cast<std::uint32_t>(words[2]) |
                                (static_cast<std::uint64_t>(static_cast<std::uint32_t>(words[3])) << 32);
    // 128 bits so that a garbage count cannot overflow the expected size into a match.
    unsigned __int128 const expected_bytes =
        token_shard_header_bytes + static_cast<unsigned __int128>(count) * static_cast<unsigned>(token_bits / 8);
    require(expected_bytes == actual_bytes,
            "token shard {} is truncated or corrupt: its header promises {} tokens ({} bytes) but the file has {} "
            "bytes; {}",
            path.string(), count, expected_bytes, actual_bytes, remake_hint);
    return {static_cast<std::int64_t>(count), token_bits};
}

}  // namespace

void write_token_shard(std::filesystem::path const& path, std::span<std::int32_t const> tokens, int token_bits) {
    check_token_bits(token_bits);
    check_tokens_fit(tokens, token_bits, path);
    std::filesystem::path const partial = path.string() + ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        require(out.good(), "cannot write token shard {}: check that the folder exists and is writable",
                partial.string());
        auto const header = make_header(static_cast<std::int64_t>(tokens.size()), token_bits);
        out.write(reinterpret_cast<char const*>(header.data()), static_cast<std::streamsize>(sizeof(header)));
        write_payload(out, tokens, token_bits);
        out.close();
        require(!out.fail(), "failed writing token shard {}: is the disk full?", partial.string());
    }
    std::error_code error;
    std::filesystem::rename(partial, path, error);
    require(!error, "cannot move {} to {}: {}", partial.string(), path.string(), error.message());
}

void TokenShard::Unmap::operator()(std::byte const* mapping) const {
    ::munmap(const_cast<std::byte*>(mapping), length);
}

TokenShard::TokenShard(std::filesystem::path path, Mapping mapping, std::int64_t size, int token_bits)
    : path_(std::move(path)), mapping_(std::move(mapping)), size_(size), token_bits_(token_bits),
      max_token_(find_max_token()) {}

TokenShard TokenShard::open(std::filesystem::path const& path) {
    FileDescriptor const file = open_for_reading(path);
    std::uint64_t const bytes = file_bytes(file, path);
    require(bytes >= token_shard_header_bytes,
            "token shard {} is truncated: {} bytes is shorter than the {}-byte header; {}", path.string(), bytes,
            token_shard_header_bytes, remake_hint);
    void* const address = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, file.get(), 0);
    require(address != MAP_FAILED, "cannot map token shard {} into memory: {}", path.string(), std::strerror(errno));
    Mapping mapping(static_cast<std::byte const*>(address), Unmap{bytes});
    Header const header = parse_header(mapping.get(), bytes, path);
    return TokenShard(path, std::move(mapping), header.count, header.token_bits);
}

void TokenShard::read(std::int64_t offset, std::int64_t count, std::int32_t* out) const {
    require(offset >= 0 && count >= 0 && offset <= size_ && count <= size_ - offset,
            "cannot read tokens [{}, {}) from token shard {}: it holds {} tokens", offset, offset + count,
            path_.string(), size_);
    if (count == 0) return;  // `out` may then be null, which memcpy does not allow
    if (token_bits_ == 16) {
        auto const* source = reinterpret_cast<std::uint16_t const*>(tokens()) + offset;
        std::copy(source, source + count, out);
    } else {
        std::memcpy(out, tokens() + offset * 4, static_cast<std::size_t>(count) * 4);
    }
}

std::int32_t TokenShard::find_max_token() const {
    if (size_ == 0) return -1;
    if (token_bits_ == 16) {
        auto const* first = reinterpret_cast<std::uint16_t const*>(tokens());
        return *std::max_element(first, first + size_);
    }
    auto const* first = reinterpret_cast<std::uint32_t const*>(tokens());
    std::uint32_t const largest = *std::max_element(first, first + size_);
    require(largest <= static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max()),
            "token shard {} is corrupt: it holds token id {}, beyond any vocabulary; {}", path_.string(), largest,
            remake_hint);
    return static_cast<std::int32_t>(largest);
}

}  // namespace axonn
