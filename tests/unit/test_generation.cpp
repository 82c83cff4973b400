// Generation with the cache of keys and values (model/generate.h) against generation without it, serially on
// gpt2-micro with a 300-word vocabulary (greedy decoding also on the micro Llama) (untrained weights, whose largest logits at a position are never close
// enough for rounding to swap them, as the MPI extraction test relies on too):
//   - the logits of a sequence fed in chunks over the cache equal those of one forward over it, within 1e-5
//     relative (norm-wise; they differ by the summation order of attention only);
//   - greedy decoding with the cache gives the tokens of greedy decoding by a full forward per token, also past
//     the context, where the cache restarts from its last half (the uncached reference restarts its window alike);
//   - a model whose LM head runs in chunks of rows generates the same tokens, its prompt fed in pieces;
//   - the cache holds the prompts and their new tokens, not a context of 10^7 positions;
//   - the sampling options: top-k 1 and a tiny top-p are greedy at any temperature, the draws follow the seed,
//     a stop token ends a continuation and is kept, and no new tokens means none.
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/generate.h"
#include "support/greedy_uncached.h"
#include "support/micro_model.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace axonn {
namespace {

using testing::greedy_uncached;
using testing::micro_model;

std::vector<std::int32_t> some_tokens(int count, int salt) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) tokens[i] = (i * 37 + salt * 11 + 5) % 300;
    return tokens;
}

struct Fixture {
    GptConfig config = micro_model();
    CpuBackend backend;
    ProcessGrid serial{MPI_COMM_SELF, GridShape{}};
    Decoder model{config, backend, serial, 2, config.max_seq};
    Fixture() { model.init_weights(5); }
};

TEST(Generation, CachedLogitsEqualOneForward) {
    Fixture f;
    int const B = 2, T = 40;
    std::vector<std::int32_t> tokens = some_tokens(B * T, 1);
    f.model.forward(Batch{B, T, tokens.data(), nullptr, nullptr});
    int const Vpy = f.model.vocab_slice().rows;
    std::vector<float> const whole(f.model.logits(), f.model.logits() + static_cast<std::size_t>(B) * T * Vpy);

    KvCache cache(f.model.architecture(), GridShape{}, B, f.config.max_seq);
    std::vector<float> chunked(whole.size());
    int past = 0;
    for (int n : {17, 1, 1, 1, 1, 1, 18}) {
        std::vector<std::int32_t> chunk;
        for (int b = 0; b < B; ++b) {
            chunk.insert(chunk.end(), tokens.begin() + b * T + past, tokens.begin() + b * T + past + n);
        }
        f.model.forward_cached(Batch{B, n, chunk.data(), nullptr, nullptr}, cache);
        for (int b = 0; b < B; ++b) {
            std::copy_n(f.model.logits() + static_cast<std::size_t>(b) * n * Vpy, static_cast<std::size_t>(n) * Vpy,
                        chunked.begin() + (static_cast<std::size_t>(b) * T + past) * Vpy);
        }
        past += n;
    }
    ASSERT_EQ(past, T);
    EXPECT_EQ(cache.length(), T);
    EXPECT_LT(testing::relative_difference(chunked, whole), 1e-5);
}

// Each family: greedy decoding with the cache gives the tokens of a full forward per token, within the model's
// context and past a context of 16, where the cache restarts.
struct FamilyModel {
    char const* name;
    ModelConfig config;
};

class GreedyGeneration : public ::testing::TestWithParam<FamilyModel> {};

TEST_P(GreedyGeneration, WithTheCacheEqualsWithout) {
    ModelConfig const& config = GetParam().config;
    CpuBackend backend;
    ProcessGrid serial{MPI_COMM_SELF, GridShape{}};
    Decoder model{config, backend, serial, 2, config.context()};
    model.init_weights(5);
    SampleOptions greedy;
    greedy.temperature = 0;
    greedy.new_tokens = 90;
    std::vector<std::vector<std::int32_t>> const prompts = {some_tokens(9, 2), some_tokens(1, 3), some_tokens(70, 4)};
    for (int context : {config.context(), 16}) {
        std::vector<std::vector<std::int32_t>> const cached = generate(model, prompts, greedy, context);
        ASSERT_EQ(cached.size(), prompts.size());
        for (std::size_t p = 0; p < prompts.size(); ++p) {
            EXPECT_EQ(cached[p], greedy_uncached(model, prompts[p], greedy.new_tokens, context))
                << "prompt " << p << ", context " << context;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Families, GreedyGeneration,
                         ::testing::Values(FamilyModel{"gpt2", micro_model()},
                                           FamilyModel{"llama", testing::micro_llama()}),
                         [](auto const& info) { return std::string(info.param.name); });

// A model built to train with its LM head in chunks (DecoderOptions::logit_rows, as `axonn train` builds it) holds
// the logits of 6 rows only: it feeds a 70-token prompt through the cache 6 tokens at a time, and continues it
// with the tokens of the model that holds every row's.
TEST(Generation, AModelWithLogitsInChunksFeedsItsPromptInPieces) {
    Fixture f;
    Decoder chunked(f.config, f.backend, f.serial, 2, f.config.max_seq, DecoderOptions{.logit_rows = 6});
    chunked.init_weights(5);
    SampleOptions greedy;
    greedy.temperature = 0;
    greedy.new_tokens = 20;
    std::vector<std::vector<std::int32_t>> const prompts = {some_tokens(70, 4)};
    EXPECT_EQ(generate(chunked, prompts, greedy, f.config.max_seq),
              generate(f.model, prompts, greedy, f.config.max_seq));
}

TEST(Generation, SamplingOptionsBehave) {
    Fixture f;
    std::vector<std::vector<std::int32_t>> const prompts = {some_tokens(6, 7)};
    SampleOptions options;
    options.new_tokens = 20;
    options.temperature = 0;
    std::vector<std::int32_t> const greedy = generate(f.model, prompts, options, 64).front();
    ASSERT_EQ(greedy.size(), 20u);

    options.temperature = 5;  // flat enough that a draw from all tokens would almost surely leave the greedy path
    options.top_k = 1;
    EXPECT_EQ(generate(f.model, prompts, options, 64).front(), greedy) << "top-k 1";
    options.top_k = 0;
    options.top_p = 1e-6f;
    EXPECT_EQ(generate(f.model, prompts, options, 64).front(), greedy) << "a tiny top-p";

    options.top_p = 1;
    options.seed = 1;
    std::vector<std::int32_t> const first = generate(f.model, prompts, options, 64).front();
    EXPECT_EQ(generate(f.model, prompts, options, 64).front(), first) << "the same seed";
    EXPECT_NE(first, greedy);
    options.seed = 2;
    EXPECT_NE(generate(f.model, prompts, options, 64).front(), first) << "another seed";

    options.temperature = 0;
    options.stop_token = greedy[4];
    std::vector<std::int32_t> const stopped = generate(f.model, prompts, options, 64).front();
    auto const first_stop = std::find(greedy.begin(), greedy.end(), greedy[4]) - greedy.begin();
    EXPECT_EQ(stopped, std::vector<std::int32_t>(greedy.begin(), greedy.begin() + first_stop + 1));

    options.new_tokens = 0;
    EXPECT_TRUE(generate(f.model, prompts, options, 64).front().empty());
}

// Another grid's rounding of the logits must not change the draw: two tokens of equal probability that it sorts the
// other way round (one raised by an ulp), or every logit moved by a few ulps (a draw that walked the cumulative
// probabilities moved its boundaries by the rounding of every token before them: on a nearly flat distribution
// over GPT-2's vocabulary, 2 seeds of 7 drew other tokens on other grids).
TEST(Generation, ADrawDoesNotDependOnTheRoundingOfTheLogits) {
    std::vector<float> logits(50257);
    for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = 1e-3f * static_cast<float>(i % 97);  // nearly flat
    logits[3] = logits[5] = 2.0f;
    std::vector<float> rounded = logits;
    rounded[5] = std::nextafter(rounded[5], 3.0f);  // now sorted before token 3
    for (std::size_t i = 0; i < rounded.size(); i += 7) rounded[i] = std::nextafter(rounded[i], -1.0f);
    // Top-k cuts where the logits leave a gap (tokens 3 and 5; then the 518 of 0.096): a token within rounding of
    // the cut would be kept on one grid and not on the other.
    for (auto const& [top_k, top_p] : {std::pair{0, 1.0f}, std::pair{0, 0.9f}, std::pair{2, 1.0f},
                                       std::pair{520, 1.0f}}) {
        SampleOptions options;
        options.temperature = 1.0f;
        options.top_k = top_k;
        options.top_p = top_p;
        for (std::uint64_t draw = 0; draw < 200; ++draw) {
            EXPECT_EQ(sample_token(logits, options, {3, 7}, draw), sample_token(rounded, options, {3, 7}, draw))
                << "top_k " << top_k << " top_p " << top_p << " draw " << draw;
        }
    }
}

// The draws follow softmax(logits / temperature) over the tokens kept: 40,000 draws from four tokens, each token's
// count within 4 standard deviations of its expectation (a test that fails by chance once in ~10^4 runs, but its
// draws are fixed by the seed: it passes or fails for good).
TEST(Generation, DrawsFollowTheSoftmax) {
    std::vector<float> const logits = {1.0f, 0.0f, 2.0f, -1.0f};
    SampleOptions options;
    options.temperature = 0.5f;
    options.top_k = 3;  // token 3 is left out
    std::vector<double> expected = {std::exp(2.0), 1.0, std::exp(4.0), 0.0};
    double const total = expected[0] + expected[1] + expected[2];
    int const draws = 40000;
    std::vector<int> counts(4);
    for (int draw = 0; draw < draws; ++draw) ++counts[sample_token(logits, options, {11, 7}, draw)];
    for (int id = 0; id < 4; ++id) {
        double const p = expected[id] / total, mean = p * draws, sigma = std::sqrt(draws * p * (1 - p));
        EXPECT_NEAR(counts[id], mean, 4 * sigma + 1e-9) << "token " << id;
    }
}

// The cache holds the longest prompt and its new tokens, not the model's whole context; at most the context.
TEST(Generation, TheCacheHoldsPromptPlusNewTokens) {
    std::vector<std::vector<std::int32_t>> const prompts = {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}};
    EXPECT_EQ(cache_positions(prompts, 10, 10'000'000), 15);
    EXPECT_EQ(cache_positions(prompts, 10, 12), 12);
    EXPECT_EQ(cache_positions(prompts, 0, 64), 5);
}

// The cache a generation allocates holds the prompts and their new tokens, not the model's whole context: a Llama
// whose config.json claims 10^7 positions (a cache of 5 GB for this micro model's 2 layers of 2 key/value heads of
// 32 channels, keys and values in fp32) generates 3 tokens within a few MB more than the process held before.
TEST(Generation, AModelOfAHugeContextAllocatesOnlyWhatItGenerates) {
    LlamaConfig config = testing::micro_llama();
    config.max_position_embeddings = 10'000'000;
    CpuBackend backend;
    ProcessGrid serial{MPI_COMM_SELF, GridShape{}};
    Decoder model{config, backend, serial, 1, 16};
    model.init_weights(5);
    SampleOptions greedy;
    greedy.temperature = 0;
    greedy.new_tokens = 3;
    rusage before{};
    ::getrusage(RUSAGE_SELF, &before);
    std::vector<std::vector<std::int32_t>> const prompts = {some_tokens(5, 1)};
    EXPECT_EQ(generate(model, prompts, greedy, ModelConfig(config).context())[0].size(), 3u);
    rusage after{};
    ::getrusage(RUSAGE_SELF, &after);
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB more at the peak";  // 64 MiB
}

TEST(Generation, OptionsAreChecked) {
    SampleOptions options;
    EXPECT_NO_THROW(options.validate("--max-new-tokens"));
    options.top_p = 0;
    EXPECT_THROW(options.validate("--max-new-tokens"), Error);
    options.top_p = 1.5f;
    EXPECT_THROW(options.validate("--max-new-tokens"), Error);
    options = {};
    options.new_tokens = -1;
    EXPECT_THROW(options.validate("--max-new-tokens"), Error);
    options = {};
    options.temperature = -1;
    EXPECT_THROW(options.validate("--max-new-tokens"), Error);
}

}  // namespace
}  // namespace axonn
