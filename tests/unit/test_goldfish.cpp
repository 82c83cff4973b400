// The Goldfish mask (train/goldfish.h) and the masked losses a training step reports (train/train_step.h):
//   - each strategy drops about 1/k of the targets: within 5 binomial standard deviations over 2^18 random
//     targets (h >= 2 over GPT-2's vocabulary, so that the windows are distinct and the draws independent);
//   - the hash mask is a function of the h-token window alone: a passage gets the same mask wherever it occurs
//     (another row, another offset, another header before it), and the first h-1 targets of a row are kept;
//   - the static mask drops exactly positions 0, k, 2k, ...; the random mask changes from step to step;
//   - a masked step's loss is the kept targets' mean, and its all/kept/dropped losses follow from the per-token
//     losses (1e-6 relative: float losses summed in double, in a different order).
// The same masks and losses on every grid are checked in tests/mpi/test_model_grids.cpp.
#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/goldfish.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace axonn {
namespace {

std::vector<std::int32_t> random_ids(std::size_t count, int vocab, std::uint64_t stream) {
    std::vector<std::int32_t> ids(count);
    for (std::size_t i = 0; i < count; ++i) ids[i] = static_cast<std::int32_t>(philox4x32({5, stream}, i)[0] % vocab);
    return ids;
}

double dropped_fraction(std::vector<float> const& keep) {
    return 1.0 - std::accumulate(keep.begin(), keep.end(), 0.0) / static_cast<double>(keep.size());
}

struct RateCase {
    GoldfishStrategy strategy;
    int k;
    int h;
};

class GoldfishRate : public ::testing::TestWithParam<RateCase> {};

TEST_P(GoldfishRate, DropsAboutOneInK) {
    RateCase const c = GetParam();
    GoldfishOptions options;
    options.k = c.k;
    options.h = c.h;
    options.strategy = c.strategy;
    int const T = 1024;
    // GPT-2's vocabulary: nearly every window is distinct, so the drops are independent draws.
    std::vector<std::int32_t> const targets = random_ids(std::size_t{1} << 18, 50257, 1);
    std::vector<float> keep(targets.size());
    goldfish_mask(options, targets, T, 3, keep);
    // Only positions t >= h-1 of a row can be dropped (hash); every position for random. The rate the banner
    // prints is checked against the mask's.
    double const expected = goldfish_drop_fraction(options, T);
    EXPECT_DOUBLE_EQ(expected, (c.strategy == GoldfishStrategy::hash ? double(T - c.h + 1) / T : 1.0) / c.k);
    double const sigma = std::sqrt(expected * (1 - expected) / static_cast<double>(targets.size()));
    EXPECT_NEAR(dropped_fraction(keep), expected, 5 * sigma);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, GoldfishRate,
    ::testing::Values(RateCase{GoldfishStrategy::hash, 2, 13}, RateCase{GoldfishStrategy::hash, 3, 13},
                      RateCase{GoldfishStrategy::hash, 4, 13}, RateCase{GoldfishStrategy::hash, 8, 4},
                      RateCase{GoldfishStrategy::hash, 32, 2}, RateCase{GoldfishStrategy::random, 4, 13},
                      RateCase{GoldfishStrategy::random, 32, 13}));

TEST(GoldfishMask, HashGivesEveryCopyOfAPassageTheSameMask) {
    GoldfishOptions options;
    options.k = 4;
    options.h = 13;
    int const T = 256;
    std::vector<std::int32_t> const passage = random_ids(100, 50257, 2);
    // Three rows: the passage at offsets 0, 37 and 150 after different random headers.
    std::vector<std::int32_t> targets = random_ids(3 * T, 50257, 3);
    std::vector<int> const offsets = {0, 37, 150};
    for (int row = 0; row < 3; ++row) {
        std::copy(passage.begin(), passage.end(), targets.begin() + row * T + offsets[row]);
    }
    std::vector<float> keep(targets.size());
    goldfish_mask(options, targets, T, 0, keep);
    int compared = 0, dropped = 0;
    for (int i = options.h - 1; i < static_cast<int>(passage.size()); ++i) {  // windows wholly inside the passage
        float const first = keep[static_cast<std::size_t>(offsets[0] + i)];
        for (int row = 1; row < 3; ++row) {
            EXPECT_EQ(keep[static_cast<std::size_t>(row * T + offsets[row] + i)], first) << "passage token " << i;
        }
        ++compared;
        dropped += first == 0.0f;
    }
    EXPECT_GT(dropped, 5) << "too few drops in " << compared << " targets for the comparison to mean anything";
    // A row's first h-1 targets are always kept.
    for (int t = 0; t < options.h - 1; ++t) EXPECT_EQ(keep[static_cast<std::size_t>(t)], 1.0f);
}

TEST(GoldfishMask, HashDependsOnTheOrderOfTheWindowAndOnNothingElse) {
    GoldfishOptions options;
    options.k = 2;
    options.h = 4;
    int differ = 0;
    for (std::uint64_t trial = 0; trial < 64; ++trial) {
        std::vector<std::int32_t> window = random_ids(4, 1000, 10 + trial);
        std::vector<std::int32_t> reversed(window.rbegin(), window.rend());
        differ += goldfish_hash_drops(options, window) != goldfish_hash_drops(options, reversed);
    }
    EXPECT_GT(differ, 10) << "the hash ignores the order of the window (as the reference's product does)";
    // A different seed is a different mask.
    GoldfishOptions reseeded = options;
    reseeded.seed = 1;
    std::vector<std::int32_t> const targets = random_ids(4096, 1000, 4);
    std::vector<float> a(targets.size()), b(targets.size());
    goldfish_mask(options, targets, 4096, 0, a);
    goldfish_mask(reseeded, targets, 4096, 0, b);
    EXPECT_NE(a, b);
}

TEST(GoldfishMask, AWindowLongerThanTheSequenceDropsNothingAndSaysSo) {
    GoldfishOptions options{.k = 2, .h = 20};
    int const T = 16;
    std::vector<std::int32_t> const targets = random_ids(4096, 50257, 7);
    std::vector<float> keep(targets.size());
    goldfish_mask(options, targets, T, 0, keep);
    EXPECT_EQ(dropped_fraction(keep), 0.0);
    EXPECT_EQ(goldfish_drop_fraction(options, T), 0.0);
    options.strategy = GoldfishStrategy::positional;
    goldfish_mask(options, targets, T, 0, keep);
    EXPECT_DOUBLE_EQ(dropped_fraction(keep), goldfish_drop_fraction(options, T));  // 0, 2, ..., 14: 8 of 16
}

// The hash strategy's 1/k holds where the data's h-grams differ: with h = 1 on text of one repeated token, each
// target's window is the same, so the mask drops all of them or none. The share is measured from the mask (ignored
// targets not counted), not taken from 1/k.
TEST(GoldfishMask, TheShareDroppedIsMeasuredFromTheMask) {
    GoldfishOptions const options{.k = 4, .h = 1};
    int const T = 16;
    for (std::int32_t const token : {65, 66, 67, 68, 69, 70, 71, 72}) {
        std::vector<std::int32_t> targets(256, token);
        targets[5] = -1;
        std::vector<float> keep(targets.size());
        goldfish_mask(options, targets, T, 0, keep);
        GoldfishShare const share = goldfish_share(targets, keep);
        EXPECT_EQ(share.targets, 255);
        EXPECT_TRUE(share.dropped == 0 || share.dropped == 255) << share.dropped;
        EXPECT_EQ(share.dropped, static_cast<std::int64_t>(std::count(keep.begin(), keep.end(), 0.0f)) - 1);
    }
    EXPECT_DOUBLE_EQ(goldfish_drop_fraction(options, T), 0.25);
    std::vector<std::int32_t> const varied = random_ids(1 << 16, 50257, 3);
    std::vector<float> keep(varied.size());
    goldfish_mask(options, varied, T, 0, keep);
    EXPECT_NEAR(goldfish_share(varied, keep).fraction(), 0.25, 0.01);  // 65,536 draws: sigma 0.0017
}

TEST(GoldfishMask, StaticDropsEveryKthPositionAndRandomRedrawsEachStep) {
    GoldfishOptions options;
    options.k = 3;
    options.strategy = GoldfishStrategy::positional;
    int const T = 10;
    std::vector<std::int32_t> targets = random_ids(2 * T, 100, 6);
    targets[4] = -1;  // ignored: never counts
    std::vector<float> keep(targets.size());
    goldfish_mask(options, targets, T, 0, keep);
    std::vector<float> const expected = {0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0};
    EXPECT_EQ(keep, expected);

    options.strategy = GoldfishStrategy::random;
    std::vector<std::int32_t> const many = random_ids(4096, 100, 7);
    std::vector<float> step0(many.size()), again(many.size()), step1(many.size());
    goldfish_mask(options, many, 64, 0, step0);
    goldfish_mask(options, many, 64, 0, again);
    goldfish_mask(options, many, 64, 1, step1);
    EXPECT_EQ(step0, again);
    EXPECT_NE(step0, step1);
}

// "off", as a resumed run's changed settings name it, is no Goldfish at all.
TEST(GoldfishSpec, OffIsNone) { EXPECT_FALSE(parse_goldfish("off").enabled()); }

// The banner and the checkpoint show h only for the hash strategy, the one that reads it (the banner said h=5 for
// a static mask that no h changes); what is shown reads back as the same options.
TEST(GoldfishSpec, DescribesTheContextOnlyForTheHash) {
    EXPECT_EQ(parse_goldfish("k=4,h=5,strategy=static").describe(), "k=4,strategy=static");
    EXPECT_EQ(parse_goldfish("k=4,h=5,strategy=random").describe(), "k=4,strategy=random");
    EXPECT_EQ(parse_goldfish("k=4,h=5").describe(), "k=4,h=5,strategy=hash");
    for (char const* spec : {"k=3,strategy=static", "k=4,h=7,strategy=hash", "k=2,strategy=random"}) {
        EXPECT_EQ(parse_goldfish(parse_goldfish(spec).describe()).describe(), spec);
    }
}

TEST(GoldfishMask, OffKeepsEveryTargetButTheIgnoredOnes) {
    std::vector<std::int32_t> targets = {3, -1, 5, 7};
    std::vector<float> keep(4);
    goldfish_mask(GoldfishOptions{}, targets, 4, 0, keep);
    EXPECT_EQ(keep, (std::vector<float>{1, 0, 1, 1}));
}

struct SpecCase {
    std::string spec;
    std::string error;  // empty: valid
};

class GoldfishSpec : public ::testing::TestWithParam<SpecCase> {};

TEST_P(GoldfishSpec, ParsesOrNamesTheProblem) {
    SpecCase const c = GetParam();
    if (c.error.empty()) {
        EXPECT_NO_THROW(parse_goldfish(c.spec));
        return;
    }
    try {
        parse_goldfish(c.spec);
        ADD_FAILURE() << c.spec << " was accepted";
    } catch (UsageError const& e) {
        EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(
    Specs, GoldfishSpec,
    ::testing::Values(SpecCase{"k=4", ""}, SpecCase{"k=4,h=13,strategy=hash", ""}, SpecCase{"k=3,strategy=static", ""},
                      SpecCase{"strategy=random,k=32,h=1", ""}, SpecCase{"k=1", "k=1 must be at least 2"},
                      SpecCase{"k=4,h=0", "h=0 must be at least 1"}, SpecCase{"k=4,strategy=fancy", "'fancy'"},
                      SpecCase{"h=13", "needs k"}, SpecCase{"k=four", "not an integer"},
                      SpecCase{"k=4,w=2", "unknown key 'w'"}, SpecCase{"k", "not key=value"},
                      SpecCase{"off", ""}, SpecCase{"k=4,k=5", "k is given twice"},
                      SpecCase{"k=4,h=13,h=7", "h is given twice"},
                      SpecCase{"k=4,", "--goldfish k=4,: an item is empty"},
                      SpecCase{"k=4,,h=13", "an item is empty"}),
    [](auto const& info) { return "case" + std::to_string(info.index); });

TEST(GoldfishStep, LossIsTheKeptTargetsMeanAndTheSplitAddsUp) {
    GptConfig config = gpt_preset("gpt2-micro");
    config.vocab_size = 300;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    int const B = 4, T = 16;
    Decoder model(config, backend, serial, B, T);
    model.init_weights(3);
    AdamW optimizer(model.segments(), model.layout().total(), backend, AdamWConfig{});
    std::vector<std::int32_t> const tokens = random_ids(B * T, 300, 8);
    std::vector<std::int32_t> targets = random_ids(B * T, 300, 9);
    targets[7] = -1;
    GoldfishOptions goldfish;
    goldfish.k = 3;
    goldfish.h = 2;
    std::vector<float> keep(targets.size());
    goldfish_mask(goldfish, targets, T, 0, keep);

    // The per-token losses of the weights before the step.
    model.forward(Batch{B, T, tokens.data(), targets.data(), nullptr});
    std::vector<double> sums(4, 0.0);  // all, count, kept, count
    for (std::size_t i = 0; i < targets.size(); ++i) {
        if (targets[i] < 0) continue;
        sums[0] += model.token_losses()[i];
        sums[1] += 1;
        sums[2] += keep[i] * model.token_losses()[i];
        sums[3] += keep[i];
    }
    ASSERT_GT(sums[3], 0);
    ASSERT_LT(sums[3], sums[1]);
    StepResult const step = train_step(model, optimizer, Batch{B, T, tokens.data(), targets.data(), keep.data()}, 1e-3f);
    ASSERT_TRUE(step.masked.has_value());
    EXPECT_NEAR(step.loss, sums[2] / sums[3], 1e-6 * sums[2] / sums[3]);
    EXPECT_NEAR(step.masked->kept_targets, sums[2] / sums[3], 1e-6 * sums[2] / sums[3]);
    EXPECT_NEAR(step.masked->all_targets, sums[0] / sums[1], 1e-6 * sums[0] / sums[1]);
    double const dropped = (sums[0] - sums[2]) / (sums[1] - sums[3]);
    EXPECT_NEAR(step.masked->dropped_targets, dropped, 1e-6 * dropped);
    StepResult const unmasked = train_step(model, optimizer, Batch{B, T, tokens.data(), targets.data(), nullptr}, 1e-3f);
    EXPECT_FALSE(unmasked.masked.has_value());
}

}  // namespace
}  // namespace axonn
