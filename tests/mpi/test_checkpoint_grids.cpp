// Any grid to any grid, for each family: under mpirun at np 1, 2, 4 and 8, gpt2-micro and the micro Llama (whose
// 2 key/value heads are replicated on y = 4 and 8, and each replicated row must be saved once), B = 8, T = 16,
// train 2 AdamW steps on each grid of the world size (all 20 at np 8 for GPT-2) and save a checkpoint (in files of
// at most 4 KiB, so each rank writes many); every grid of that world size (at np 8, a quarter of them: pairs
// (i, j) with i + j divisible by 4, so that each grid loads from five and saves for five), and the serial model on
// each rank, load it and take a third step, as does the run that never moved. Checked:
//   - the loaded weights, gathered, equal the saved run's bit for bit (loading is a copy, not arithmetic);
//   - the third step's loss (which reads both AdamW moments through the update) is within 1e-5 relative of the
//     unmoved run's: the tolerance of every grid against serial for one step (test_model_grids.cpp), since the
//     third step on another grid differs from the unmoved run only by that grid's summation order.
// Assertions are EXPECT_: a rank that left a test early would leave the others waiting in a collective.
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/core/rng.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/model/model_config.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using testing::micro_llama;
using testing::micro_model;
using testing::world_size;

constexpr int batch_size = 8, seq_len = 16;
constexpr double step_tolerance = 1e-5;

// One folder for all ranks: rank 0 names it, everyone gets the name.
fs::path shared_folder() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string name = rank == 0 ? (fs::temp_directory_path() / ("axonn_ckpt_grids_" + std::to_string(::getpid())))
                                       .string()
                                 : std::string();
    int length = static_cast<int>(name.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    name.resize(static_cast<std::size_t>(length));
    MPI_Bcast(name.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
    return name;
}

// A model and its optimizer on one grid.
struct GridRun {
    std::unique_ptr<ProcessGrid> grid;
    CpuBackend backend;
    std::unique_ptr<Decoder> model;
    std::unique_ptr<AdamW> optimizer;

    GridRun(ModelConfig const& config, MPI_Comm comm, GridShape const& shape)
        : grid(std::make_unique<ProcessGrid>(comm, shape)) {
        model = std::make_unique<Decoder>(config.architecture(), backend, *grid, batch_size / shape.batch_replicas(),
                                          seq_len);
        model->init_weights(5);
        optimizer = std::make_unique<AdamW>(model->segments(), model->layout().total(), backend, AdamWConfig{});
    }

    float step(int step) {
        std::vector<std::int32_t> tokens(batch_size * seq_len), targets(tokens.size());
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            auto const token = [&](int stream) {
                return static_cast<std::int32_t>(philox4x32({31, static_cast<std::uint64_t>(stream)}, i)[0] %
                                                 model->architecture().vocab_size);
            };
            tokens[i] = token(2 * step);
            targets[i] = token(2 * step + 1);
        }
        Batch const rows = replica_rows(*grid, batch_size, seq_len, tokens.data(), targets.data());
        return train_step(*model, *optimizer, rows, 1e-3f).loss;
    }

    void load(fs::path const& folder) {
        CheckpointReader reader(folder);
        reader.verify(grid->comm(Group::world));
        reader.read_local(model->layout(), {model->params(), optimizer->exp_avg(), optimizer->exp_avg_sq()});
        optimizer->restore_steps_taken(2);
    }

    std::vector<Tensor> gathered_weights() {
        std::vector<Tensor> weights;
        for (int id = 0; id < model->layout().count(); ++id) weights.push_back(model->gather(id, false));
        return weights;
    }
};

bool bitwise_equal(std::vector<Tensor> const& a, std::vector<Tensor> const& b) {
    for (std::size_t t = 0; t < a.size(); ++t) {
        if (!std::equal(a[t].span<float>().begin(), a[t].span<float>().end(), b[t].span<float>().begin())) return false;
    }
    return a.size() == b.size();
}

std::string grid_text(GridShape const& g) { return testing::grid_test_name(g); }

struct Family {
    char const* name;
    ModelConfig model;
};

class CheckpointGrids : public ::testing::TestWithParam<Family> {};

TEST_P(CheckpointGrids, EveryGridLoadsWhatEveryGridSaved) {
    ModelConfig const& model = GetParam().model;
    fs::path root = shared_folder();
    root += std::string("_") + GetParam().name;
    std::vector<GridShape> const grids = valid_grids(model.architecture().declarations, world_size(), batch_size);
    auto const paired = [&](std::size_t i, std::size_t j) { return grids.size() <= 10 || (i + j) % 4 == 0; };
    for (std::size_t i = 0; i < grids.size(); ++i) {
        GridShape const& saved_on = grids[i];
        GridRun original(model, MPI_COMM_WORLD, saved_on);
        original.step(0);
        original.step(1);
        fs::path const dir = root / grid_text(saved_on);
        fs::path const folder = save_checkpoint(*original.grid, model,
                                                {original.model->param_values(), original.optimizer->exp_avg(),
                                                 original.optimizer->exp_avg_sq()},
                                                2, nlohmann::json::object(), {dir, 0, 4096});
        std::vector<Tensor> const saved = original.gathered_weights();
        float const unmoved = original.step(2);

        for (std::size_t j = 0; j < grids.size(); ++j) {
            if (!paired(i, j)) continue;
            GridShape const& loaded_on = grids[j];
            GridRun moved(model, MPI_COMM_WORLD, loaded_on);
            moved.load(folder);
            EXPECT_TRUE(bitwise_equal(moved.gathered_weights(), saved))
                << "saved on " << grid_text(saved_on) << ", loaded on " << grid_text(loaded_on);
            float const loss = moved.step(2);
            EXPECT_LT(std::abs(loss - unmoved) / std::abs(unmoved), step_tolerance)
                << "saved on " << grid_text(saved_on) << ", loaded on " << grid_text(loaded_on);
        }
        GridRun serial(model, MPI_COMM_SELF, GridShape{});
        serial.load(folder);
        EXPECT_TRUE(bitwise_equal(serial.gathered_weights(), saved)) << "saved on " << grid_text(saved_on);
        float const loss = serial.step(2);
        EXPECT_LT(std::abs(loss - unmoved) / std::abs(unmoved), step_tolerance) << "saved on " << grid_text(saved_on);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) fs::remove_all(root);
}

INSTANTIATE_TEST_SUITE_P(Families, CheckpointGrids,
                         ::testing::Values(Family{"gpt2", micro_model()}, Family{"llama", micro_llama()}),
                         [](auto const& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace axonn
