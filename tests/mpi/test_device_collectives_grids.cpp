// The model's collectives on device memory, on every grid: under mpirun at np 1, 2, 4 and 8, GPT-2 micro and
// Llama micro train on the simulated device (support/simulated_device_backend.h), whose collectives go through a
// DeviceCommunication (support/simulated_device_communication.h) the way NCCL's do on a GPU, and on the CPU
// backend with MPI's collectives, from the same seed and batches:
//   - every collective of the grid is issued and accounted alike: the same operations, groups, calls and bytes,
//     with --debug-collectives on for the device run (its signature check runs on the host for both ways);
//   - every collective of more than 16 bytes took the device's way, and the rest are the host's sums (the loss
//     weights, the gradient norm's squares: one or two doubles): from the grid's record of every call, less the
//     calls the device collectives were given, matched by size. A buffer made on the host that a collective
//     moves would go MPI's way and fail this;
//   - the losses of three AdamW steps and the first gradient norm agree within 1e-5 relative. Not bit for bit: a
//     device collective completes through its handle, so a blocking MPI all-reduce (MPI_Allreduce) becomes a
//     non-blocking one (MPI_Iallreduce), which may add in another order; 1e-5 is the bound of grid against serial;
//   - with bf16 gradient communication, the bf16 collectives take the device's way too (same checks).
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/model/decoder.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"
#include "support/simulated_device_communication.h"
#include "support/tiny_architectures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_device_collectives_grids {

// The suites' batch (support/micro_model.h); a function, since the world size is known only once MPI runs.
int batch() { return testing::suite_batch(); }
constexpr int seq = 16, steps = 3;

struct DeviceCase {
    std::string family;
    Architecture architecture;
    GridShape grid;
    DType grad_comm;
};

void PrintTo(DeviceCase const& c, std::ostream* out) { *out << c.family << " on " << c.grid; }

std::vector<DeviceCase> every_case() {
    std::vector<DeviceCase> cases;
    for (auto const& [family, architecture] : {std::pair{std::string("gpt2"), decoder_architecture(testing::micro_model())},
                                               std::pair{std::string("llama"), decoder_architecture(testing::micro_llama())}}) {
        for (GridShape const& grid : testing::suite_grids(architecture.declarations, batch())) {
            cases.push_back({family, architecture, grid, DType::f32});
        }
    }
    Architecture const gpt2 = decoder_architecture(testing::micro_model());
    cases.push_back({"gpt2_bf16_grad_comm", gpt2, testing::suite_grids(gpt2.declarations, batch()).back(),
                     DType::bf16});
    return cases;
}

// One training run on a grid of the whole world: on the CPU's memory with MPI, or on the simulated device with
// its collectives.
struct GridRun {
    std::shared_ptr<testing::SimulatedDeviceCommunication> device;
    std::unique_ptr<CpuBackend> backend;
    std::unique_ptr<ProcessGrid> grid;
    std::unique_ptr<Decoder> model;
    std::unique_ptr<AdamW> optimizer;

    GridRun(DeviceCase const& c, bool on_device) {
        CommOptions options;
        if (on_device) {
            device = std::make_shared<testing::SimulatedDeviceCommunication>();
            options.device = device;
            // --debug-collectives checks every call's signature over MPI, whichever way its data goes.
            options.debug_collectives = true;
            backend = std::make_unique<testing::SimulatedDeviceBackend>();
        } else {
            backend = std::make_unique<CpuBackend>();
        }
        backend->set_gemm_tuning(false);
        grid = std::make_unique<ProcessGrid>(MPI_COMM_WORLD, c.grid, std::array{Axis::x, Axis::y, Axis::z, Axis::data},
                                             options);
        DecoderOptions model_options;
        model_options.grad_scatter_comm = model_options.grad_sum_comm = c.grad_comm;
        model = std::make_unique<Decoder>(c.architecture, *backend, *grid, batch() / c.grid.batch_replicas(), seq,
                                          model_options);
        model->init_weights(5);
        optimizer = std::make_unique<AdamW>(model->segments(), model->layout().total(), *backend, AdamWConfig{});
    }
};

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

class DeviceCollectivesOnGrid : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(DeviceCollectivesOnGrid, TrainAsMpisCollectivesDo) {
    DeviceCase const& c = GetParam();
    std::vector<std::int32_t> tokens(batch() * seq), targets(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>((i * 13) % c.architecture.vocab_size);
        targets[i] = static_cast<std::int32_t>((i * 17 + 1) % c.architecture.vocab_size);
    }
    GridRun host(c, false), device(c, true);
    Batch const rows = replica_rows(*host.grid, batch(), seq, tokens.data(), targets.data());
    for (int step = 0; step < steps; ++step) {
        StepResult const on_host = train_step(*host.model, *host.optimizer, rows, 1e-3f);
        StepResult const on_device = train_step(*device.model, *device.optimizer, rows, 1e-3f);
        EXPECT_LT(relative(on_device.loss, on_host.loss), 1e-5) << "step " << step;
        if (step == 0) {
            EXPECT_LT(relative(on_device.grad_norm, on_host.grad_norm), 1e-5);
        }
    }
    std::vector<TrafficEntry> const host_traffic = host.grid->traffic().entries();
    std::vector<TrafficEntry> const device_traffic = device.grid->traffic().entries();
    ASSERT_EQ(device_traffic.size(), host_traffic.size());
    for (std::size_t i = 0; i < host_traffic.size(); ++i) {
        EXPECT_EQ(device_traffic[i].op, host_traffic[i].op);
        EXPECT_EQ(device_traffic[i].group, host_traffic[i].group) << host_traffic[i].op;
        EXPECT_EQ(device_traffic[i].calls, host_traffic[i].calls) << host_traffic[i].op;
        EXPECT_EQ(device_traffic[i].bytes, host_traffic[i].bytes) << host_traffic[i].op;
    }
    // The calls that went MPI's way: all of them, less one of the same size for each device collective.
    std::multiset<std::uint64_t> host_way;
    for (CollectiveRecord const& call : device.grid->traffic().take_calls()) host_way.insert(call.bytes);
    for (std::uint64_t const bytes : device.device->collective_bytes) {
        auto const match = host_way.find(bytes);
        ASSERT_NE(match, host_way.end()) << "a device collective of " << bytes << " bytes the grid did not record";
        host_way.erase(match);
    }
    for (std::uint64_t const bytes : host_way) {
        EXPECT_LE(bytes, 16u) << "a collective of " << bytes << " bytes went MPI's way: a buffer on the host";
    }
    if (testing::world_size() > 1) {
        EXPECT_FALSE(device.device->collective_bytes.empty());
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, DeviceCollectivesOnGrid, ::testing::ValuesIn(every_case()),
                         [](auto const& info) { return info.param.family + "_" + testing::grid_test_name(info.param.grid); });

}  // namespace test_device_collectives_grids
}  // namespace axonn
