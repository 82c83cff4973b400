// Generation on a grid gives the serial tokens: under mpirun at np 1, 2, 4 and 8, gpt2-micro (vocabulary 300) is
// built serially and on every grid from the same seed, and five prompts of 1 to 70 tokens are continued by 40
// tokens each (generate(): prompts shared over the data × z replicas, Z ranks stepping together, the cache
// sharded over Y, the next token chosen from the logits gathered over Y). A 70-token prompt outgrows the 64-token
// context and one of 24 tokens does so while generating, so both restarts of the cache are crossed; prompts are
// taken in chunks of 16. Greedy and sampled (temperature 0.9, top-k 50, top-p 0.9) decoding must give exactly
// the serial tokens: the logits differ by summation order only, and with untrained weights no two of a
// position's likely tokens are close enough to swap.
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/generate.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>

namespace axonn {
namespace {

using testing::micro_model;
using testing::world_size;

class GenerationOnGrid : public ::testing::TestWithParam<GridShape> {};

TEST_P(GenerationOnGrid, TokensMatchSerial) {
    GptConfig const config = micro_model();
    GridShape const shape = GetParam();
    int const prompt_chunk = 16;
    CpuBackend backend;
    ProcessGrid self(MPI_COMM_SELF, GridShape{});
    ProcessGrid grid(MPI_COMM_WORLD, shape, parse_axis_order("x,y,z,data"));
    Decoder serial(config, backend, self, 1, prompt_chunk);
    Decoder parallel(config, backend, grid, 1, prompt_chunk);
    serial.init_weights(13);
    parallel.init_weights(13);
    std::vector<std::vector<std::int32_t>> prompts;
    for (int length : {1, 7, 24, 70, 3}) {
        std::vector<std::int32_t> prompt(static_cast<std::size_t>(length));
        for (int i = 0; i < length; ++i) prompt[i] = (i * 53 + length * 7) % config.vocab_size;
        prompts.push_back(prompt);
    }
    SampleOptions greedy;
    greedy.new_tokens = 40;
    greedy.temperature = 0;
    SampleOptions sampled = greedy;
    sampled.temperature = 0.9f;
    sampled.top_k = 50;
    sampled.top_p = 0.9f;
    sampled.seed = 4;
    for (SampleOptions const& options : {greedy, sampled}) {
        auto const expected = generate(serial, prompts, options, config.max_seq);
        auto const actual = generate(parallel, prompts, options, config.max_seq);
        ASSERT_EQ(actual.size(), prompts.size());
        for (std::size_t p = 0; p < prompts.size(); ++p) {
            EXPECT_EQ(actual[p].size(), 40u);
            EXPECT_EQ(actual[p], expected[p]) << "prompt " << p << ", temperature " << options.temperature;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, GenerationOnGrid, ::testing::ValuesIn(valid_grids(micro_model(), world_size(), world_size())),
                         [](auto const& info) { return testing::grid_test_name(info.param); });

}  // namespace
}  // namespace axonn
