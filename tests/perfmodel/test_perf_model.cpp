// The performance model against a real training step, under mpirun at np 1, 2, 4 and 8, for every grid of the
// `mpi` test matrix (gpt2-micro, vocabulary 300, B = 8, T = 16):
//   - traffic: the predicted calls and bytes of every (operation, group) equal, exactly, what the communication
//     layer recorded during one train_step;
//   - memory: the predicted bytes of the model, its gradients, AdamW and all buffers are within 10% of the peak
//     that axonn's tensors really held (the allocator's high-water mark).
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/gpt.h"
#include "axonn/perf/memory_model.h"
#include "axonn/perf/traffic_model.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <map>
#include <utility>

namespace axonn {
namespace {

using testing::micro_model;
using testing::world_size;

constexpr int batch = 8, seq = 16;

class PerfModelOnGrid : public ::testing::TestWithParam<GridShape> {};

TEST_P(PerfModelOnGrid, PredictedTrafficEqualsMeasuredAndMemoryWithinTenPercent) {
    GridShape const shape = GetParam();
    ProcessGrid grid(MPI_COMM_WORLD, shape);
    CpuBackend backend;
    int const local_batch = batch / (shape.data * shape.z);
    std::int64_t const before = tensor_bytes_in_use();
    reset_tensor_bytes_peak();
    Gpt model(micro_model(), backend, grid, local_batch, seq);
    model.init_weights(3);
    AdamW optimizer(model.segments(), model.layout().total(), backend, AdamWConfig{});
    std::vector<std::int32_t> tokens(local_batch * seq), targets(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>(i * 7 % 300), targets[i] = static_cast<int>(i * 5 % 300);

    grid.traffic().clear();
    train_step(model, optimizer, {local_batch, seq, tokens.data(), targets.data(), nullptr}, 1e-3f);
    std::map<std::pair<std::string, Group>, std::pair<std::uint64_t, std::uint64_t>> measured, predicted;
    for (auto const& entry : grid.traffic().entries()) measured[{entry.op, entry.group}] = {entry.calls, entry.bytes};
    StepShape const step{micro_model(), shape, batch, seq};
    for (auto const& entry : predict_step_traffic(step)) {
        auto& [calls, bytes] = predicted[{entry.op, entry.group}];
        calls += entry.calls;
        bytes += entry.bytes;
    }
    for (auto const& [key, value] : measured) {
        EXPECT_EQ(predicted[key], value) << key.first << " on " << group_name(key.second) << ": predicted (calls, bytes) "
                                         << predicted[key].first << ", " << predicted[key].second << " vs measured "
                                         << value.first << ", " << value.second;
    }
    for (auto const& [key, value] : predicted) {
        EXPECT_TRUE(measured.count(key)) << "predicted " << key.first << " on " << group_name(key.second)
                                         << " never happened";
    }

    double const measured_peak = static_cast<double>(tensor_bytes_peak() - before);
    double const predicted_peak = static_cast<double>(predict_memory(step, MemoryOptions{}).total());
    EXPECT_NEAR(predicted_peak, measured_peak, 0.1 * measured_peak);
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, PerfModelOnGrid, ::testing::ValuesIn(grid_factorisations(world_size())),
                         [](::testing::TestParamInfo<GridShape> const& info) {
                             return testing::grid_test_name(info.param);
                         });

}  // namespace
}  // namespace axonn
