// Token shards: round trips in both widths, with and without a loss mask, bounds checks, and a clear, file-naming
// error for every way a shard file can be broken.
#include "axonn/core/error.h"
#include "axonn/io/token_shard.h"

#include "support/temp_dir.h"
#include "support/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

namespace axonn {
namespace {

using testing::file_bytes;
using testing::write_file;

using axonn::testing::TempDir;

// A fresh folder per test, removed afterwards.


void set_header_word(std::string& bytes, int index, std::int32_t value) {
    std::memcpy(bytes.data() + index * sizeof(std::int32_t), &value, sizeof(value));
}

std::vector<std::int32_t> read_all(TokenShard const& shard) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(shard.size()));
    shard.read(0, shard.size(), tokens.data());
    return tokens;
}

std::vector<std::uint8_t> read_all_mask(TokenShard const& shard) {
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(shard.size()));
    shard.read_loss_mask(0, shard.size(), mask.data());
    return mask;
}

static_assert(!std::is_copy_constructible_v<TokenShard> && !std::is_copy_assignable_v<TokenShard>);
static_assert(std::is_nothrow_move_constructible_v<TokenShard> && std::is_nothrow_move_assignable_v<TokenShard>);

class TokenShardRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(TokenShardRoundTrip, ReadsBackWhatWasWritten) {
    int const bits = GetParam();
    std::int32_t const largest = bits == 16 ? 65535 : 2147483647;
    std::vector<std::int32_t> const tokens = {0, 1, 50256, 7, largest, 12, 65535, 3};
    TempDir dir;
    write_token_shard(dir / "tokens.bin", tokens, bits);

    EXPECT_EQ(std::filesystem::file_size(dir / "tokens.bin"), token_shard_header_bytes + tokens.size() * bits / 8);
    TokenShard const shard = TokenShard::open(dir / "tokens.bin");
    EXPECT_EQ(shard.size(), static_cast<std::int64_t>(tokens.size()));
    EXPECT_EQ(shard.token_bits(), bits);
    EXPECT_EQ(shard.path(), dir / "tokens.bin");
    EXPECT_EQ(shard.max_token(), largest);
    EXPECT_EQ(read_all(shard), tokens);

    std::vector<std::int32_t> middle(3);
    shard.read(2, 3, middle.data());
    EXPECT_EQ(middle, (std::vector<std::int32_t>{50256, 7, largest}));
}

TEST_P(TokenShardRoundTrip, RejectsIdsThatDoNotFit) {
    int const bits = GetParam();
    TempDir dir;
    std::vector<std::int32_t> const negative = {1, -1};
    EXPECT_THROW(write_token_shard(dir / "tokens.bin", negative, bits), Error);
    if (bits == 16) {
        std::vector<std::int32_t> const too_wide = {65536};
        EXPECT_THROW(write_token_shard(dir / "tokens.bin", too_wide, bits), Error);
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "tokens.bin"));
}

TEST_P(TokenShardRoundTrip, ReadsBackALossMask) {
    int const bits = GetParam();
    std::vector<std::int32_t> const tokens = {9, 8, 7, 6, 5, 4};
    std::vector<std::uint8_t> const mask = {0, 0, 1, 1, 0, 1};
    TempDir dir;
    write_token_shard(dir / "masked.bin", tokens, bits, ShardOrigin{{"byte", 257}, 3}, mask);

    EXPECT_EQ(std::filesystem::file_size(dir / "masked.bin"),
              token_shard_header_bytes + tokens.size() * bits / 8 + tokens.size());
    TokenShard const shard = TokenShard::open(dir / "masked.bin");
    EXPECT_TRUE(shard.has_loss_mask());
    EXPECT_EQ(shard.loss_tokens(), 3);
    EXPECT_EQ(read_all(shard), tokens);
    EXPECT_EQ(read_all_mask(shard), mask);
    std::vector<std::uint8_t> middle(3, 9);
    shard.read_loss_mask(1, 3, middle.data());
    EXPECT_EQ(middle, (std::vector<std::uint8_t>{0, 1, 1}));
    EXPECT_THROW(shard.read_loss_mask(4, 3, middle.data()), InternalError);
}

INSTANTIATE_TEST_SUITE_P(Widths, TokenShardRoundTrip, ::testing::Values(16, 32),
                         [](auto const& info) { return std::to_string(info.param) + "bit"; });

TEST(TokenShard, EmptyShardHasNoMaxToken) {
    TempDir dir;
    write_token_shard(dir / "empty.bin", {}, 16);
    TokenShard const shard = TokenShard::open(dir / "empty.bin");
    EXPECT_EQ(shard.size(), 0);
    EXPECT_EQ(shard.max_token(), -1);
}

TEST(TokenShard, AShardWithoutAMaskCountsEveryToken) {
    TempDir dir;
    std::vector<std::int32_t> const tokens = {1, 2, 3};
    write_token_shard(dir / "plain.bin", tokens, 16);
    TokenShard const shard = TokenShard::open(dir / "plain.bin");
    EXPECT_FALSE(shard.has_loss_mask());
    EXPECT_EQ(shard.loss_tokens(), 3);
    EXPECT_EQ(read_all_mask(shard), (std::vector<std::uint8_t>{1, 1, 1}));
}

TEST(TokenShard, RefusesAMaskOfAnotherLengthOrValue) {  // the writer's callers build masks: a bug if it happens
    TempDir dir;
    std::vector<std::int32_t> const tokens = {1, 2, 3};
    std::vector<std::uint8_t> const short_mask = {1, 0}, two = {1, 2, 0};
    EXPECT_THROW(write_token_shard(dir / "a.bin", tokens, 16, {}, short_mask), InternalError);
    EXPECT_THROW(write_token_shard(dir / "a.bin", tokens, 16, {}, two), InternalError);
    EXPECT_FALSE(std::filesystem::exists(dir / "a.bin"));
}

TEST(TokenShard, RejectsWidthsOtherThan16And32) {
    TempDir dir;
    std::vector<std::int32_t> const tokens = {1, 2};
    EXPECT_THROW(write_token_shard(dir / "tokens.bin", tokens, 8), Error);
}

TEST(TokenShard, ReadOutsideTheShardThrows) {
    TempDir dir;
    std::vector<std::int32_t> const tokens = {1, 2, 3, 4};
    write_token_shard(dir / "tokens.bin", tokens, 16);
    TokenShard const shard = TokenShard::open(dir / "tokens.bin");
    std::vector<std::int32_t> out(8);
    EXPECT_THROW(shard.read(2, 3, out.data()), InternalError);  // the loader's job: a bug if it happens
    EXPECT_THROW(shard.read(-1, 1, out.data()), InternalError);
    EXPECT_THROW(shard.read(0, -1, out.data()), InternalError);
    EXPECT_NO_THROW(shard.read(4, 0, out.data()));
}

TEST(TokenShard, StaysReadableAfterAMove) {
    TempDir dir;
    std::vector<std::int32_t> const tokens = {5, 6, 7};
    write_token_shard(dir / "tokens.bin", tokens, 32);
    TokenShard moved_from = TokenShard::open(dir / "tokens.bin");
    TokenShard const shard = std::move(moved_from);
    EXPECT_EQ(read_all(shard), tokens);
}

struct BrokenShard {
    std::string name;
    std::function<void(std::string&)> damage;  // applied to a valid 4-token 16-bit shard's bytes
    std::string expected;                      // a phrase the message must hold besides the file name
};

class BrokenShardTest : public ::testing::TestWithParam<BrokenShard> {};

TEST_P(BrokenShardTest, ThrowsOneLineNamingTheFile) {
    TempDir dir;
    std::filesystem::path const path = dir / "broken.bin";
    std::vector<std::int32_t> const tokens = {10, 20, 30, 40};
    write_token_shard(path, tokens, 16);
    std::string bytes = file_bytes(path);
    GetParam().damage(bytes);
    write_file(path, bytes);
    try {
        TokenShard::open(path);
        FAIL() << "opening a shard with " << GetParam().name << " did not throw";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find(path.string()), std::string::npos) << message;
        EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BrokenShardTest,
    ::testing::Values(BrokenShard{"ShorterThanHeader", [](std::string& b) { b.resize(100); }, "truncated"},
                      BrokenShard{"BadMagic", [](std::string& b) { set_header_word(b, 0, 0x12345678); },
                                  "not an axonn token shard"},
                      BrokenShard{"BadVersion", [](std::string& b) { set_header_word(b, 1, 4); }, "version 4"},
                      BrokenShard{"UnknownFlag", [](std::string& b) { set_header_word(b, 16, 2); },
                                  "unknown flags 0x00000002"},
                      BrokenShard{"MaskMissing", [](std::string& b) { set_header_word(b, 16, 1); },
                                  "4 tokens and their loss mask"},
                      BrokenShard{"MaskTruncated",
                                  [](std::string& b) {
                                      set_header_word(b, 16, 1);
                                      b += std::string("\x01\x00\x01", 3);
                                  },
                                  "truncated or corrupt"},
                      BrokenShard{"MaskValueNotZeroOrOne",
                                  [](std::string& b) {
                                      set_header_word(b, 16, 1);
                                      b += std::string("\x01\x00\x02\x01", 4);
                                  },
                                  "the loss mask of token 2 is 2, not 0 or 1"},
                      BrokenShard{"BadWidth", [](std::string& b) { set_header_word(b, 4, 8); }, "width 8"},
                      BrokenShard{"TruncatedBody", [](std::string& b) { b.pop_back(); }, "truncated or corrupt"},
                      BrokenShard{"TrailingBytes", [](std::string& b) { b += "xx"; }, "truncated or corrupt"},
                      BrokenShard{"IdBeyondInt32",
                                  [](std::string& b) {
                                      set_header_word(b, 2, 2);  // the 8 token bytes as two 32-bit ids
                                      set_header_word(b, 4, 32);
                                      b.replace(token_shard_header_bytes, 4, 4, '\xFF');
                                  },
                                  "beyond any vocabulary"},
                      BrokenShard{"HugeCount", [](std::string& b) { set_header_word(b, 3, 0x7FFFFFFF); },
                                  "truncated or corrupt"}),
    [](auto const& info) { return info.param.name; });

TEST(TokenShard, RecordsItsTokenizerAndDataset) {
    TempDir dir;
    std::vector<std::int32_t> const tokens = {1, 2, 3};
    write_token_shard(dir / "tokens.bin", tokens, 16, ShardOrigin{{"gpt2", 50257}, 0x1234567890ABCDEFull});
    TokenShard const shard = TokenShard::open(dir / "tokens.bin");
    ASSERT_TRUE(shard.tokenizer().has_value());
    EXPECT_EQ(*shard.tokenizer(), (ShardTokenizer{"gpt2", 50257}));
    EXPECT_EQ(shard.dataset_id(), 0x1234567890ABCDEFull);
}

// A shard of tokens 5..8 as an older version wrote it: version 1 had zeros where version 2 records its origin,
// and neither had the flags word, where this one holds garbage.
std::filesystem::path old_shard(TempDir const& dir, int version) {
    std::filesystem::path const path = dir / "old.bin";
    write_token_shard(path, std::vector<std::int32_t>{5, 6, 7, 8}, 16, ShardOrigin{{"gpt2", 50257}, 99});
    std::string bytes = file_bytes(path);
    set_header_word(bytes, 1, version);
    for (int word = 5; version == 1 && word < 16; ++word) set_header_word(bytes, word, 0);
    set_header_word(bytes, 16, 1);
    write_file(path, bytes);
    return path;
}

TEST(TokenShard, ReadsVersionOneShardsWhichRecordNoTokenizer) {
    TempDir dir;
    TokenShard const shard = TokenShard::open(old_shard(dir, 1));
    EXPECT_FALSE(shard.tokenizer().has_value());
    EXPECT_EQ(shard.dataset_id(), 0u);
    EXPECT_EQ(read_all(shard), (std::vector<std::int32_t>{5, 6, 7, 8}));
}

TEST(TokenShard, ReadsVersionTwoShardsWhoseTokensAllCount) {
    TempDir dir;
    TokenShard const shard = TokenShard::open(old_shard(dir, 2));
    EXPECT_EQ(*shard.tokenizer(), (ShardTokenizer{"gpt2", 50257}));
    EXPECT_FALSE(shard.has_loss_mask());
    EXPECT_EQ(read_all(shard), (std::vector<std::int32_t>{5, 6, 7, 8}));
    EXPECT_EQ(read_all_mask(shard), (std::vector<std::uint8_t>(4, 1)));
}

TEST(TokenShard, OpeningAFifoFailsAtOnceInsteadOfWaitingForAWriter) {
    TempDir dir;
    std::filesystem::path const path = dir / "pipe.bin";
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    try {
        TokenShard::open(path);
        FAIL() << "a FIFO was opened as a shard";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("is a FIFO (named pipe), not a regular file"), std::string::npos)
            << error.what();
    }
}

TEST(TokenShard, MissingFileThrowsNamingIt) {
    TempDir dir;
    std::filesystem::path const path = dir / "absent.bin";
    try {
        TokenShard::open(path);
        FAIL() << "opening a missing shard did not throw";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find(path.string()), std::string::npos) << message;
        EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace axonn
