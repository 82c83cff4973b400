// The data loader: batches are consecutive windows of the token stream across shards, targets are the inputs
// shifted by one, the stream wraps at the end of an epoch, and restoring a saved state resumes exactly.
#include "axonn/core/error.h"
#include "axonn/io/token_shard.h"
#include "axonn/train/data_loader.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

class DataLoaderTest : public ::testing::Test {
protected:
    void SetUp() override {
        // Two shards whose tokens count up 0..99 across the pair, so every token says where it came from.
        std::vector<std::int32_t> tokens(100);
        std::iota(tokens.begin(), tokens.end(), 0);
        write_token_shard(dir_ / "a.bin", std::span(tokens).first(37), 16);
        write_token_shard(dir_ / "b.bin", std::span(tokens).subspan(37), 32);
    }
    testing::TempDir temp_dir_;
    fs::path const& dir_ = temp_dir_.path();
    ShardTokenizer const byte_tokenizer{"byte", 257};
};

TEST_F(DataLoaderTest, WindowsCrossShardsAndTargetsAreShifted) {
    DataLoader loader(dir_, 2, 10, byte_tokenizer);
    EXPECT_EQ(loader.total_tokens(), 100);
    EXPECT_EQ(loader.shard_count(), 2u);
    std::vector<std::int32_t> tokens(20), targets(20);
    for (int batch = 0; batch < 2; ++batch) {
        loader.next_batch(tokens.data(), targets.data());
        for (int i = 0; i < 20; ++i) {
            EXPECT_EQ(tokens[i], batch * 20 + i);
            EXPECT_EQ(targets[i], batch * 20 + i + 1);
        }
    }
}

TEST_F(DataLoaderTest, WrapsToANewEpoch) {
    DataLoader loader(dir_, 3, 10, byte_tokenizer);
    std::vector<std::int32_t> tokens(30), targets(30);
    for (int i = 0; i < 3; ++i) loader.next_batch(tokens.data(), targets.data());  // windows start 0..80
    EXPECT_EQ(loader.state().epoch, 0);
    loader.next_batch(tokens.data(), targets.data());  // 90 + 11 > 100: wraps
    EXPECT_EQ(loader.state().epoch, 1);
    EXPECT_EQ(tokens[0], 0);
}

TEST_F(DataLoaderTest, RestoringStateResumesTheSameBatches) {
    DataLoader loader(dir_, 2, 7, byte_tokenizer);
    std::vector<std::int32_t> tokens(14), targets(14), first(14), second(14);
    for (int i = 0; i < 5; ++i) loader.next_batch(tokens.data(), targets.data());
    DataLoaderState const saved = loader.state();
    loader.next_batch(first.data(), targets.data());
    loader.next_batch(first.data(), targets.data());
    DataLoader resumed(dir_, 2, 7, byte_tokenizer);
    resumed.restore(saved);
    resumed.next_batch(second.data(), targets.data());
    resumed.next_batch(second.data(), targets.data());
    EXPECT_EQ(first, second);
}

TEST_F(DataLoaderTest, RejectsTokensBeyondTheVocabularyAndTooLittleData) {
    EXPECT_THROW(DataLoader(dir_, 2, 10, ShardTokenizer{"byte", 50}), Error);  // ids reach 99
    EXPECT_THROW(DataLoader(dir_, 10, 10, byte_tokenizer), Error);  // needs 101 tokens
    DataLoader loader(dir_, 1, 10, byte_tokenizer);
    EXPECT_THROW(loader.restore({500, 0}), Error);
}

TEST_F(DataLoaderTest, NeverTrainsOnTheFoldersValidationShard) {
    std::vector<std::int32_t> const validation(50, 7);
    write_token_shard(dir_ / "val.bin", validation, 16);
    DataLoader loader(dir_, 2, 10, byte_tokenizer);
    EXPECT_EQ(loader.shard_count(), 2u);
    EXPECT_EQ(loader.total_tokens(), 100);
}

TEST_F(DataLoaderTest, RefusesShardsOfAnotherTokenizer) {
    std::vector<std::int32_t> const tokens(50, 7);
    write_token_shard(dir_ / "c.bin", tokens, 16, ShardOrigin{{"gpt2", 50257}, 1});
    try {
        DataLoader loader(dir_, 2, 10, byte_tokenizer);
        FAIL() << "a gpt2 shard was accepted for the byte tokenizer";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("prepared with the gpt2 tokenizer (50257 ids) but this run uses byte"),
                  std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(DataLoader(dir_ / "c.bin", 2, 10, ShardTokenizer{"gpt2", 50257}));
}

TEST_F(DataLoaderTest, AShardChangedDuringTheRunStopsItWithItsName) {
    DataLoader loader(dir_, 2, 10, byte_tokenizer);
    std::vector<std::int32_t> tokens(20), targets(20);
    loader.next_batch(tokens.data(), targets.data());
    // What `cp small.bin a.bin` does: the same file, rewritten shorter in place.
    std::vector<std::int32_t> const shorter(5, 1);
    write_token_shard(dir_ / "small.bin", shorter, 16);
    fs::copy_file(dir_ / "small.bin", dir_ / "a.bin", fs::copy_options::overwrite_existing);
    try {
        loader.next_batch(tokens.data(), targets.data());
        FAIL() << "a rewritten shard went unnoticed";
    } catch (Error const& e) {
        EXPECT_NE(std::string(e.what()).find("a.bin changed while this run was reading it"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace axonn
