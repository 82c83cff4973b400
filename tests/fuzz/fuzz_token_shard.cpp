// Fuzzes the token-shard reader, axonn::TokenShard (src/axonn/io/token_shard.cpp): open() with its checks of the
// 1024-byte header against the file's size, max_token(), read(), and the loss mask of version 3 (its flag, its
// size, its values: loss_tokens(), read_loss_mask()).
//
// Input: the bytes of a shard file. Each input is written to one file in a temporary folder of this process
// (under /dev/shm when it exists, else $TMPDIR or /tmp; removed at exit) and opened from there. When open()
// accepts it, the harness reads the first min(size, 64) tokens and their mask, and the last ones.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report (ASan, UBSan), any
// other exception escaping (std::, InternalError), or an accepted shard whose header fields, tokens, largest
// token or loss mask differ from what the bytes of the file hold.
#include "axonn/core/error.h"
#include "axonn/io/token_shard.h"
#include "fuzz_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace fs = std::filesystem;

void check(bool condition, char const* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_token_shard: accepted shard breaks: %s\n", what);
        std::abort();
    }
}

std::uint32_t word(std::uint8_t const* data, std::size_t index) {
    std::uint32_t value;
    std::memcpy(&value, data + 4 * index, 4);
    return value;
}

// The token at `index` as the file's bytes hold it.
std::int64_t token_in_bytes(std::uint8_t const* data, int bits, std::int64_t index) {
    std::uint8_t const* at = data + axonn::token_shard_header_bytes + static_cast<std::size_t>(index) * (bits / 8);
    if (bits == 16) {
        std::uint16_t value;
        std::memcpy(&value, at, 2);
        return value;
    }
    std::uint32_t value;
    std::memcpy(&value, at, 4);
    return value;
}

// The loss mask of the token at `index` as the file's bytes hold it: 1 without a mask.
int mask_in_bytes(axonn::TokenShard const& shard, std::uint8_t const* data, std::int64_t index) {
    if (!shard.has_loss_mask()) return 1;
    return data[axonn::token_shard_header_bytes + static_cast<std::size_t>(shard.size()) * (shard.token_bits() / 8) +
                static_cast<std::size_t>(index)];
}

void check_window(axonn::TokenShard const& shard, std::uint8_t const* data, std::int64_t offset, std::int64_t count) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(count) + 1, -7);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(count) + 1, 7);
    shard.read(offset, count, tokens.data());
    shard.read_loss_mask(offset, count, mask.data());
    for (std::int64_t i = 0; i < count; ++i) {
        check(tokens[static_cast<std::size_t>(i)] == token_in_bytes(data, shard.token_bits(), offset + i),
              "read() returns the tokens in the file");
        check(mask[static_cast<std::size_t>(i)] == mask_in_bytes(shard, data, offset + i),
              "read_loss_mask() returns the mask in the file");
    }
    check(tokens.back() == -7, "read() writes no more than count tokens");
    check(mask.back() == 7, "read_loss_mask() writes no more than count values");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    fs::path const path = fuzz::work_folder("token-shard") / "shard.bin";
    fuzz::write_file(path, data, size);
    try {
        axonn::TokenShard const shard = axonn::TokenShard::open(path);
        check(size >= axonn::token_shard_header_bytes, "the file holds the header");
        check(word(data, 0) == static_cast<std::uint32_t>(axonn::token_shard_magic), "the magic is right");
        check(word(data, 1) >= 1 && word(data, 1) <= 3, "the version is known");
        check(shard.has_loss_mask() == (word(data, 1) == 3 && word(data, 16) == 1), "the mask flag is the header's");
        int const bits = shard.token_bits();
        check(bits == 16 || bits == 32, "tokens are 16 or 32 bits");
        check(static_cast<std::uint32_t>(bits) == word(data, 4), "the width is the header's");
        std::uint64_t const count = word(data, 2) | static_cast<std::uint64_t>(word(data, 3)) << 32;
        check(shard.size() >= 0 && static_cast<std::uint64_t>(shard.size()) == count, "the size is the header's");
        check(axonn::token_shard_header_bytes + count * (bits / 8 + (shard.has_loss_mask() ? 1 : 0)) == size,
              "the size matches the file");

        std::int64_t largest = -1;
        for (std::int64_t i = 0; i < shard.size(); ++i) largest = std::max(largest, token_in_bytes(data, bits, i));
        check(shard.max_token() == largest, "max_token() is the largest token in the file");
        std::int64_t loss_tokens = 0;
        for (std::int64_t i = 0; i < shard.size(); ++i) {
            int const mask = mask_in_bytes(shard, data, i);
            check(mask == 0 || mask == 1, "every mask value is 0 or 1");
            loss_tokens += mask;
        }
        check(shard.loss_tokens() == loss_tokens, "loss_tokens() counts the mask's ones");

        std::int64_t const window = std::min<std::int64_t>(shard.size(), 64);
        check_window(shard, data, 0, window);
        check_window(shard, data, shard.size() - window, window);
        check_window(shard, data, shard.size() / 2, std::min<std::int64_t>(window, shard.size() - shard.size() / 2));
        check_window(shard, data, shard.size(), 0);
    } catch (axonn::Error const&) {
        // A refused shard: the expected outcome for most inputs.
    }
    return 0;
}
