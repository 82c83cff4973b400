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
};

TEST_F(DataLoaderTest, WindowsCrossShardsAndTargetsAreShifted) {
    DataLoader loader(dir_, 2, 10, 257);
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
    DataLoader loader(dir_, 3, 10, 257);
    std::vector<std::int32_t> tokens(30), targets(30);
    for (int i = 0; i < 3; ++i) loader.next_batch(tokens.data(), targets.data());  // windows start 0..80
    EXPECT_EQ(loader.state().epoch, 0);
    loader.next_batch(tokens.data(), targets.data());  // 90 + 11 > 100: wraps
    EXPECT_EQ(loader.state().epoch, 1);
    EXPECT_EQ(tokens[0], 0);
}

TEST_F(DataLoaderTest, RestoringStateResumesTheSameBatches) {
    DataLoader loader(dir_, 2, 7, 257);
    std::vector<std::int32_t> tokens(14), targets(14), first(14), second(14);
    for (int i = 0; i < 5; ++i) loader.next_batch(tokens.data(), targets.data());
    DataLoaderState const saved = loader.state();
    loader.next_batch(first.data(), targets.data());
    loader.next_batch(first.data(), targets.data());
    DataLoader resumed(dir_, 2, 7, 257);
    resumed.restore(saved);
    resumed.next_batch(second.data(), targets.data());
    resumed.next_batch(second.data(), targets.data());
    EXPECT_EQ(first, second);
}

TEST_F(DataLoaderTest, RejectsTokensBeyondTheVocabularyAndTooLittleData) {
    EXPECT_THROW(DataLoader(dir_, 2, 10, 50), Error);  // ids reach 99
    EXPECT_THROW(DataLoader(dir_, 10, 10, 257), Error);  // needs 101 tokens
    DataLoader loader(dir_, 1, 10, 257);
    EXPECT_THROW(loader.restore({500, 0}), Error);
}

}  // namespace
}  // namespace axonn
