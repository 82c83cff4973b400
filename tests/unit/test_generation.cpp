// Generation with the cache of keys and values (model/generate.h) against generation without it, serially on
// gpt2-micro with a 300-word vocabulary (greedy decoding also on the micro Llama) (untrained weights, whose largest logits at a position are never close
// enough for rounding to swap them, as the MPI extraction test relies on too):
//   - the logits of a sequence fed in chunks over the cache equal those of one forward over it, within 1e-5
//     relative (norm-wise; they differ by the summation order of attention only);
//   - greedy decoding with the cache gives the tokens of greedy decoding by a full forward per token, also past
//     the context, where the cache restarts from its last half (the uncached reference restarts its window alike);
//   - a model whose LM head runs in chunks of rows generates the same tokens, its prompt fed in pieces;
//   - the sampling options: top-k 1 and a tiny top-p are greedy at any temperature, the draws follow the seed,
//     a stop token ends a continuation and is kept, and no new tokens means none.
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/generate.h"
#include "support/micro_model.h"
#include "support/relative_difference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace axonn {
namespace {

using testing::micro_model;

std::vector<std::int32_t> some_tokens(int count, int salt) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) tokens[i] = (i * 37 + salt * 11 + 5) % 300;
    return tokens;
}

// Greedy decoding without a cache: one forward over the window per token. The window is what the cache would
// hold: the whole sequence until it fills `context` positions, then its last context/2 tokens, growing again.
std::vector<std::int32_t> greedy_uncached(Decoder& model, std::vector<std::int32_t> tokens, int new_tokens,
                                          int context) {
    std::size_t const prompt = tokens.size();
    std::size_t start = tokens.size() > static_cast<std::size_t>(context) ? tokens.size() - context : 0;
    for (int i = 0; i < new_tokens; ++i) {
        int const T = static_cast<int>(tokens.size() - start);
        model.forward(Batch{1, T, tokens.data() + start, nullptr, nullptr});
        std::int32_t next = 0;
        argmax_tokens(model, 1, T, T - 1, &next);
        tokens.push_back(next);
        if (T == context) start = tokens.size() - std::max(1, context / 2);
    }
    return {tokens.begin() + static_cast<std::ptrdiff_t>(prompt), tokens.end()};
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

// Two tokens of equal probability on one grid sort the other way round on another whose rounding raised the second
// by one ulp: the draw must not change with their order. (Walked by probability, it returned token 1 on the first
// grid and 2 on the second for a uniform in the second token's interval: a nearly flat distribution over GPT-2's
// vocabulary drew different tokens on different grids for 2 seeds of 7.)
TEST(Generation, ADrawDoesNotDependOnTheOrderOfEqualProbabilities) {
    std::vector<float> const logits = {5.0f, 1.0f, 1.0f, -2.0f};
    std::vector<float> raised = logits;
    raised[2] = std::nextafter(1.0f, 2.0f);  // now sorted before token 1
    for (auto const& [top_k, top_p] : {std::pair{0, 1.0f}, std::pair{3, 1.0f}, std::pair{0, 0.999f}}) {
        SampleOptions options;
        options.temperature = 1.0f;
        options.top_k = top_k;
        options.top_p = top_p;
        double const first = 1.0, equal = std::exp(-4.0), last = top_k == 3 ? 0.0 : std::exp(-7.0);
        double const total = top_p < 1.0f ? first + 2 * equal : first + 2 * equal + last;  // top-p drops the last
        for (double const into_pair : {0.25, 0.5, 0.75, 1.25, 1.5, 1.75}) {  // in units of one equal token's weight
            double const uniform = (first + into_pair * equal) / total;
            std::int32_t const drawn = sample_token(logits, options, uniform);
            EXPECT_EQ(drawn, into_pair < 1.0 ? 1 : 2) << "top_k " << top_k << " top_p " << top_p;
            EXPECT_EQ(sample_token(raised, options, uniform), drawn) << "top_k " << top_k << " top_p " << top_p;
        }
        EXPECT_EQ(sample_token(logits, options, 0.5), 0);
    }
}

// The cache holds the longest prompt and its new tokens, not the model's whole context; at most the context.
TEST(Generation, TheCacheHoldsPromptPlusNewTokens) {
    std::vector<std::vector<std::int32_t>> const prompts = {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}};
    EXPECT_EQ(cache_positions(prompts, 10, 10'000'000), 15);
    EXPECT_EQ(cache_positions(prompts, 10, 12), 12);
    EXPECT_EQ(cache_positions(prompts, 0, 64), 5);
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
