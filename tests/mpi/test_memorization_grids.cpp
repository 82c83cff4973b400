// Extraction on a grid gives the serial scores: under mpirun at np 1, 2, 4 and 8, gpt2-micro (vocabulary 300) is
// built serially and on every grid from the same seed, and 11 documents of 6 prefix + 8 suffix tokens are scored
// (score_extraction: documents shared over the data × z replicas in chunks, the last one padded; argmax agreed
// over Y). The greedy suffixes are
// the same tokens, and the teacher-forced losses within 1e-5 relative (the logits differ by summation order only;
// with untrained weights no two of a position's largest logits are close enough to swap).
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/memorization/extraction.h"
#include "axonn/memorization/markov_corpus.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_memorization_grids {

using testing::micro_model;
using testing::world_size;

class ExtractionOnGrid : public ::testing::TestWithParam<GridShape> {};

TEST_P(ExtractionOnGrid, ScoresMatchSerial) {
    GptConfig const config = micro_model();
    GridShape const shape = GetParam();
    int const batch = testing::suite_batch(), T = 13;
    CpuBackend backend;
    ProcessGrid self(MPI_COMM_SELF, GridShape{});
    ProcessGrid grid(MPI_COMM_WORLD, shape, parse_axis_order("x,y,z,data"));
    Decoder serial(config, backend, self, batch, T);
    Decoder parallel(config, backend, grid, batch / shape.batch_replicas(), T);
    serial.init_weights(21);
    parallel.init_weights(21);
    MarkovChain const chain(300, 16, 5);
    std::vector<std::vector<std::int32_t>> documents(11, std::vector<std::int32_t>(14));
    for (std::size_t d = 0; d < documents.size(); ++d) chain.sample(documents[d], 2, d);
    ExtractionSpec const spec{6, 8, parse_goldfish("k=4,h=3")};
    std::vector<ExtractionScore> const expected = score_extraction(serial, documents, spec);
    std::vector<ExtractionScore> const actual = score_extraction(parallel, documents, spec);
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t d = 0; d < documents.size(); ++d) {
        EXPECT_EQ(actual[d].generated, expected[d].generated) << "document " << d;
        EXPECT_EQ(actual[d].matching_prefix, expected[d].matching_prefix) << "document " << d;
        EXPECT_EQ(actual[d].kept_correct, expected[d].kept_correct) << "document " << d;
        EXPECT_EQ(actual[d].dropped_correct, expected[d].dropped_correct) << "document " << d;
        EXPECT_LT(std::abs(actual[d].loss - expected[d].loss) / expected[d].loss, 1e-5) << "document " << d;
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, ExtractionOnGrid,
                         ::testing::ValuesIn(testing::suite_grids(micro_model(), testing::suite_batch())),
                         [](auto const& info) { return testing::grid_test_name(info.param); });

}  // namespace test_memorization_grids
}  // namespace axonn
