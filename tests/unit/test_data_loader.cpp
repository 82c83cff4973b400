// The data loader: batches are consecutive windows of the token stream across shards, targets are the inputs
// shifted by one, the stream wraps at the end of an epoch, restoring a saved state resumes exactly, and each
// target carries the loss mask of its token.
#include "axonn/core/error.h"
#include "axonn/io/token_shard.h"
#include "axonn/train/data_loader.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
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

// Token i of the stream is i; in the masked shard, tokens whose id is a multiple of 3 are masked out.
std::uint8_t mask_of(std::int32_t token) { return token % 3 == 0 ? 0 : 1; }

TEST_F(DataLoaderTest, EachTargetCarriesItsTokensMaskAcrossMaskedAndUnmaskedShards) {
    std::vector<std::int32_t> tokens(37);
    std::iota(tokens.begin(), tokens.end(), 0);
    std::vector<std::uint8_t> mask(tokens.size());
    std::transform(tokens.begin(), tokens.end(), mask.begin(), mask_of);
    write_token_shard(dir_ / "a.bin", tokens, 16, {}, mask);  // b.bin, tokens 37..99, has no mask: all count
    DataLoader loader(dir_, 2, 10, byte_tokenizer);
    EXPECT_TRUE(loader.has_loss_mask());
    EXPECT_EQ(loader.loss_tokens(), 100 - 13);  // 0, 3, ..., 36 do not count
    std::vector<std::int32_t> inputs(20), targets(20);
    std::vector<float> loss_mask(20, -1.0f);
    for (int batch = 0; batch < 3; ++batch) {  // windows 0..60: the last crosses into b.bin
        loader.next_batch(inputs.data(), targets.data(), loss_mask.data());
        for (int i = 0; i < 20; ++i) {
            std::int32_t const target = batch * 20 + i + 1;
            ASSERT_EQ(targets[i], target);
            EXPECT_EQ(loss_mask[i], target < 37 ? mask_of(target) : 1.0f) << "target " << target;
        }
    }
    // A resumed loader gives the same masks.
    DataLoaderState const saved = loader.state();
    std::vector<float> next(20), resumed_mask(20);
    loader.next_batch(inputs.data(), targets.data(), next.data());
    DataLoader resumed(dir_, 2, 10, byte_tokenizer);
    resumed.restore(saved);
    resumed.next_batch(inputs.data(), targets.data(), resumed_mask.data());
    EXPECT_EQ(next, resumed_mask);
}

TEST_F(DataLoaderTest, ShardsWithoutAMaskGiveOnes) {
    DataLoader loader(dir_, 2, 10, byte_tokenizer);
    EXPECT_FALSE(loader.has_loss_mask());
    EXPECT_EQ(loader.loss_tokens(), 100);
    std::vector<std::int32_t> inputs(20), targets(20);
    std::vector<float> loss_mask(20, 0.0f);
    loader.next_batch(inputs.data(), targets.data(), loss_mask.data());
    EXPECT_EQ(loss_mask, std::vector<float>(20, 1.0f));
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
