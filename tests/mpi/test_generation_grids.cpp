// Generation on a grid gives the serial tokens: under mpirun at np 1, 2, 4 and 8 (and 3 and 6), gpt2-micro and the
// micro Llama (vocabulary 300; its 2 key/value heads split over y = 2 and replicated over y = 4 and 8) are each
// built serially and on every grid each splits on, from the same seed, and five prompts of 1 to 70 tokens are
// continued by 20 tokens each (generate(): prompts shared over the data × z replicas, Z ranks stepping together,
// the cache sharded over Y, the next token chosen from the logits gathered over the vocabulary's ranks), with the
// vocabulary over the X·Y plane (the default) and over Y (--vocab-split y). A 70-token prompt outgrows the
// 64-token context and one of 50 tokens does so while generating, so both restarts of the cache are crossed;
// prompts are taken in chunks of 16. The serial tokens are generated once per process, family and decoding. On
// every grid, greedy decoding with the cache also equals a full forward per token there.
// Greedy, sampled (temperature 0.9, top-k 50, top-p 0.9) and nucleus (temperature 1, top-p 0.9 of the whole
// vocabulary) decoding must give exactly the serial tokens: the logits differ by summation order only, and with
// untrained weights no two of a position's likely tokens are close enough to swap.
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/generate.h"
#include "axonn/parallel/vocab_parallel.h"
#include "support/greedy_uncached.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_generation_grids {

using testing::micro_model;
using testing::world_size;

// A model of either family on one of its grids.
struct ModelOnGrid {
    std::string family;
    ModelConfig config;
    GridShape grid;
};

class GenerationOnGrid : public ::testing::TestWithParam<ModelOnGrid> {};

using Tokens = std::vector<std::vector<std::int32_t>>;
constexpr int prompt_chunk = 16;

// A way of choosing tokens, named for the test's messages.
struct Decoding {
    std::string name;
    SampleOptions options;
};

// Greedy; sampled among the top 50 then the top 0.9 of their probability; and sampled among the whole
// vocabulary's top 0.9 (nucleus), where an untrained model's many nearly equal probabilities meet the cut.
std::vector<Decoding> decodings() {
    SampleOptions greedy;
    greedy.new_tokens = 20;
    greedy.temperature = 0;
    SampleOptions sampled = greedy;
    sampled.temperature = 0.9f;
    sampled.top_k = 50;
    sampled.top_p = 0.9f;
    sampled.seed = 4;
    SampleOptions nucleus = sampled;
    nucleus.temperature = 1;
    nucleus.top_k = 0;
    nucleus.seed = 5;
    return {{"greedy", greedy}, {"top-k 50, top-p 0.9", sampled}, {"top-p 0.9 of all tokens", nucleus}};
}

// The serial model's tokens for a family and a decoding, generated once per process: every grid's test compares
// with the same, and each rank would otherwise repeat the serial run for every grid.
Tokens const& serial_tokens(std::string const& family, ModelConfig const& config, Tokens const& prompts,
                            Decoding const& decoding) {
    static std::map<std::pair<std::string, std::string>, Tokens> runs;
    auto const key = std::pair(family, decoding.name);
    if (auto const found = runs.find(key); found != runs.end()) return found->second;
    CpuBackend backend;
    ProcessGrid self(MPI_COMM_SELF, GridShape{});
    Decoder serial(config, backend, self, 1, prompt_chunk);
    serial.init_weights(13);
    return runs[key] = generate(serial, prompts, decoding.options, config.context());
}

TEST_P(GenerationOnGrid, TokensMatchSerial) {
    ModelConfig const& config = GetParam().config;
    GridShape const shape = GetParam().grid;
    CpuBackend backend;
    ProcessGrid grid(MPI_COMM_WORLD, shape, parse_axis_order("x,y,z,data"));
    Tokens prompts;
    for (int length : {1, 7, 50, 70, 3}) {
        std::vector<std::int32_t> prompt(static_cast<std::size_t>(length));
        for (int i = 0; i < length; ++i) prompt[i] = (i * 53 + length * 7) % config.vocab_size();
        prompts.push_back(prompt);
    }
    // With x = 1 the two layouts are one.
    for (VocabSplit const split : {VocabSplit::xy, VocabSplit::y}) {
        if (split == VocabSplit::y && shape.x == 1) continue;
        Decoder parallel(config, backend, grid, 1, prompt_chunk, DecoderOptions{.vocab_split = split});
        parallel.init_weights(13);
        for (Decoding const& decoding : decodings()) {
            Tokens const& expected = serial_tokens(GetParam().family, config, prompts, decoding);
            auto const actual = generate(parallel, prompts, decoding.options, config.context());
            ASSERT_EQ(actual.size(), prompts.size());
            for (std::size_t p = 0; p < prompts.size(); ++p) {
                EXPECT_EQ(actual[p].size(), 20u);
                EXPECT_EQ(actual[p], expected[p]) << "prompt " << p << ", " << decoding.name << ", vocabulary over "
                                                  << vocab_split_name(split);
            }
        }
    }
}

// Greedy decoding with the cache gives on the grid what a full forward per token gives there, within the model's
// context and past a context of 16, where the cache restarts (the serial test's check, on every grid: the two
// differ in how the grid's ranks meet, in the cache's shards over Y against whole windows).
TEST_P(GenerationOnGrid, GreedyWithTheCacheEqualsWithout) {
    ModelConfig const& config = GetParam().config;
    CpuBackend backend;
    ProcessGrid grid(MPI_COMM_WORLD, GetParam().grid, parse_axis_order("x,y,z,data"));
    Decoder model(config, backend, grid, 1, config.context());
    model.init_weights(13);
    SampleOptions greedy;
    greedy.temperature = 0;
    greedy.new_tokens = 16;  // the 50-token prompt crosses the 64-token context
    Tokens prompts;
    for (int length : {9, 50}) {
        std::vector<std::int32_t> prompt(static_cast<std::size_t>(length));
        for (int i = 0; i < length; ++i) prompt[i] = (i * 37 + length * 11) % config.vocab_size();
        prompts.push_back(prompt);
    }
    for (int context : {config.context(), 16}) {
        Tokens const cached = generate(model, prompts, greedy, context);
        ASSERT_EQ(cached.size(), prompts.size());
        for (std::size_t p = 0; p < prompts.size(); ++p) {
            EXPECT_EQ(cached[p], testing::greedy_uncached(model, prompts[p], greedy.new_tokens, context))
                << "prompt " << p << ", context " << context;
        }
    }
}

// Every grid of this world size that each family splits on, with one prompt per data × z replica at most.
std::vector<ModelOnGrid> models_on_grids() {
    std::vector<ModelOnGrid> runs;
    for (auto const& [family, config] : {std::pair<std::string, ModelConfig>{"gpt2", micro_model()},
                                         std::pair<std::string, ModelConfig>{"llama", testing::micro_llama()}}) {
        for (GridShape const& grid : testing::suite_grids(config, world_size())) {
            runs.push_back({family, config, grid});
        }
    }
    return runs;
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, GenerationOnGrid, ::testing::ValuesIn(models_on_grids()),
                         [](auto const& info) {
                             return info.param.family + "_" + testing::grid_test_name(info.param.grid);
                         });

// Every rank of a data × z replica's X·Y plane takes the same token, the smallest of the plane's choices, whatever
// each rank chose (a draw that rounding tipped differently on one rank): on every grid of the world.
TEST(AgreedToken, EachPlaneTakesTheSmallestOfItsChoices) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (GridShape const& shape : grid_factorisations(world_size())) {
        ProcessGrid grid(MPI_COMM_WORLD, shape);
        std::int32_t const mine = 1000 + (rank * 7) % 13;
        int const replica = grid.batch_replica();
        std::vector<int> choices(2 * static_cast<std::size_t>(world_size()));
        std::array<int, 2> const own = {replica, mine};
        MPI_Allgather(own.data(), 2, MPI_INT, choices.data(), 2, MPI_INT, MPI_COMM_WORLD);
        std::int32_t expected = mine;
        for (int r = 0; r < world_size(); ++r) {
            if (choices[2 * r] == replica) expected = std::min(expected, choices[2 * r + 1]);
        }
        EXPECT_EQ(agreed_token(grid, mine), expected) << shape;
    }
}

}  // namespace test_generation_grids
}  // namespace axonn
