// Any grid to any grid, for each family: under mpirun at np 1, 2, 4 and 8, gpt2-micro and the micro Llama (whose
// 2 key/value heads are replicated on y = 4 and 8, and each replicated row must be saved once), B = 8, T = 16,
// train 2 AdamW steps on each grid of the world size (all 20 at np 8 for GPT-2) and save a checkpoint (in files of
// at most 16 KiB, so each rank writes many: up to 93 of GPT-2's, about 12 on an 8-rank grid without data
// replicas); every grid of that world size (at np 8, a quarter of them: pairs (i, j) with i + j divisible by 4, so
// that each grid loads from five and saves for five), and the serial model (on one rank, another for each saved
// grid: the others would only repeat it), load it and take a third step, as does the run that never moved; at
// np 6 and 8, a job of the first four ranks too (y=2, x=2). At np 3 and 6 the grids and shapes are those of
// support/micro_model.h. The runs lay their vocabulary out in turn over X·Y and over Y (--vocab-split): every other
// grid saves with Y's layout, and an even-numbered grid loads with the layout the saving run did not use, so
// checkpoints cross between the two (they hold the serial layout). Checked:
//   - the loaded weights and both AdamW moments, gathered tensor by tensor, equal the saved run's bit for bit
//     (loading is a copy, not arithmetic);
//   - the third step's loss is within 1e-5 relative of the unmoved run's: the tolerance of every grid against
//     serial for one step (test_model_grids.cpp), since the third step on another grid differs from the unmoved run
//     only by that grid's summation order. (The loss is computed before the update: the moments are checked by
//     the comparison above, not by it.)
// Assertions are EXPECT_: a rank that left a test early would leave the others waiting in a collective.
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/core/rng.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/model/model_config.h"
#include "axonn/parallel/serial_gather.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_checkpoint_grids {

namespace fs = std::filesystem;
using testing::micro_llama;
using testing::micro_model;
using testing::world_size;

// The suites' batch (support/micro_model.h); a function, since the world size is known only once MPI runs.
int batch_size() { return testing::suite_batch(); }
constexpr int seq_len = 16;
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

    GridRun(ModelConfig const& config, MPI_Comm comm, GridShape const& shape, VocabSplit split = VocabSplit::xy)
        : grid(std::make_unique<ProcessGrid>(comm, shape)) {
        model = std::make_unique<Decoder>(config.architecture(), backend, *grid, batch_size() / shape.batch_replicas(),
                                          seq_len, DecoderOptions{.vocab_split = split});
        model->init_weights(5);
        optimizer = std::make_unique<AdamW>(model->segments(), model->layout().total(), backend, AdamWConfig{});
    }

    float step(int step) {
        std::vector<std::int32_t> tokens(batch_size() * seq_len), targets(tokens.size());
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            auto const token = [&](int stream) {
                return static_cast<std::int32_t>(philox4x32({31, static_cast<std::uint64_t>(stream)}, i)[0] %
                                                 model->architecture().vocab_size);
            };
            tokens[i] = token(2 * step);
            targets[i] = token(2 * step + 1);
        }
        Batch const rows = replica_rows(*grid, batch_size(), seq_len, tokens.data(), targets.data());
        return train_step(*model, *optimizer, rows, 1e-3f).loss;
    }

    void load(fs::path const& folder) {
        CheckpointReader reader(folder);
        reader.verify(grid->comm(Group::world));
        reader.read_local(model->layout(), {model->params(), optimizer->exp_avg(), optimizer->exp_avg_sq()});
        optimizer->restore_steps_taken(2);
    }

    // Every tensor of the weights and of both moments, gathered in the serial layout, named for messages.
    std::vector<std::pair<std::string, Tensor>> gathered_state() {
        ShardLayout const& layout = model->layout();
        std::vector<Tensor> weights = model->gather_serial(false);
        std::vector<Tensor> exp_avg = gather_serial_tensors(layout, *grid, optimizer->exp_avg().data());
        std::vector<Tensor> exp_avg_sq = gather_serial_tensors(layout, *grid, optimizer->exp_avg_sq().data());
        std::vector<std::pair<std::string, Tensor>> state;
        for (int id = 0; id < layout.count(); ++id) {
            std::string const& name = layout.param(id).name;
            auto const i = static_cast<std::size_t>(id);
            state.emplace_back(name, std::move(weights[i]));
            state.emplace_back(exp_avg_name(name), std::move(exp_avg[i]));
            state.emplace_back(exp_avg_sq_name(name), std::move(exp_avg_sq[i]));
        }
        return state;
    }
};

// The names of the tensors that differ in any bit ("" when none do).
std::string differing_tensors(std::vector<std::pair<std::string, Tensor>> const& a,
                              std::vector<std::pair<std::string, Tensor>> const& b) {
    if (a.size() != b.size()) return "a different number of tensors";
    std::string differing;
    for (std::size_t t = 0; t < a.size(); ++t) {
        std::span<float const> const x = a[t].second.span<float>(), y = b[t].second.span<float>();
        bool const same = a[t].first == b[t].first && x.size() == y.size() &&
                          std::memcmp(x.data(), y.data(), x.size_bytes()) == 0;
        if (!same) differing += (differing.empty() ? "" : ", ") + a[t].first;
    }
    return differing;
}

std::string grid_text(GridShape const& g) { return testing::grid_test_name(g); }

struct Family {
    char const* name;
    ModelConfig model;
};

// A job of fewer ranks resumes it (6 → 4 at np 6, 8 → 4 at np 8): the first four ranks load the checkpoint on
// y=2, x=2 and take the third step, checked as on the grids of the world; the other ranks wait.
void expect_loads_on_four_ranks(ModelConfig const& model, fs::path const& folder,
                                std::vector<std::pair<std::string, Tensor>> const& saved, float unmoved,
                                GridShape const& saved_on) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm four = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 4 ? 0 : MPI_UNDEFINED, rank, &four);
    if (four == MPI_COMM_NULL) {
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    {
        GridRun moved(model, four, GridShape{.y = 2, .x = 2});  // its communicators go before `four`
        moved.load(folder);
        EXPECT_EQ(differing_tensors(moved.gathered_state(), saved), "")
            << "saved on " << grid_text(saved_on) << ", loaded on 4 ranks";
        float const loss = moved.step(2);
        EXPECT_LT(std::abs(loss - unmoved) / std::abs(unmoved), step_tolerance)
            << "saved on " << grid_text(saved_on) << ", loaded on 4 ranks";
    }
    MPI_Comm_free(&four);
    MPI_Barrier(MPI_COMM_WORLD);
}

class CheckpointGrids : public ::testing::TestWithParam<Family> {};

TEST_P(CheckpointGrids, EveryGridLoadsWhatEveryGridSaved) {
    ModelConfig const& model = GetParam().model;
    fs::path root = shared_folder();
    root += std::string("_") + GetParam().name;
    std::vector<GridShape> const grids = testing::suite_grids(model, batch_size());
    auto const paired = [&](std::size_t i, std::size_t j) { return grids.size() <= 10 || (i + j) % 4 == 0; };
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (std::size_t i = 0; i < grids.size(); ++i) {
        GridShape const& saved_on = grids[i];
        VocabSplit const saved_split = i % 2 == 0 ? VocabSplit::xy : VocabSplit::y;
        GridRun original(model, MPI_COMM_WORLD, saved_on, saved_split);
        original.step(0);
        original.step(1);
        fs::path const dir = root / grid_text(saved_on);
        fs::path const folder = save_checkpoint(*original.grid, model,
                                                {original.model->param_values(), original.optimizer->exp_avg(),
                                                 original.optimizer->exp_avg_sq(), saved_split},
                                                2, nlohmann::json::object(), {dir, 0, 16384});
        std::vector<std::pair<std::string, Tensor>> const saved = original.gathered_state();
        float const unmoved = original.step(2);

        for (std::size_t j = 0; j < grids.size(); ++j) {
            if (!paired(i, j)) continue;
            GridShape const& loaded_on = grids[j];
            VocabSplit const other_split = saved_split == VocabSplit::xy ? VocabSplit::y : VocabSplit::xy;
            GridRun moved(model, MPI_COMM_WORLD, loaded_on, j % 2 == 0 ? other_split : saved_split);
            moved.load(folder);
            EXPECT_EQ(differing_tensors(moved.gathered_state(), saved), "")
                << "saved on " << grid_text(saved_on) << ", loaded on " << grid_text(loaded_on);
            float const loss = moved.step(2);
            EXPECT_LT(std::abs(loss - unmoved) / std::abs(unmoved), step_tolerance)
                << "saved on " << grid_text(saved_on) << ", loaded on " << grid_text(loaded_on);
        }
        if (world_size() > 4) expect_loads_on_four_ranks(model, folder, saved, unmoved, saved_on);
        if (rank == static_cast<int>(i) % world_size()) {
            GridRun serial(model, MPI_COMM_SELF, GridShape{});
            serial.load(folder);
            EXPECT_EQ(differing_tensors(serial.gathered_state(), saved), "") << "saved on " << grid_text(saved_on);
            float const loss = serial.step(2);
            EXPECT_LT(std::abs(loss - unmoved) / std::abs(unmoved), step_tolerance)
                << "saved on " << grid_text(saved_on);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) fs::remove_all(root);
}

INSTANTIATE_TEST_SUITE_P(Families, CheckpointGrids,
                         ::testing::Values(Family{"gpt2", micro_model()}, Family{"llama", micro_llama()}),
                         [](auto const& info) { return std::string(info.param.name); });

}  // namespace test_checkpoint_grids
}  // namespace axonn
