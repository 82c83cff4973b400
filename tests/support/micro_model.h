// What the MPI suites share: the world size, gpt2-micro with a 300-word vocabulary, the model that splits
// on every grid of up to 8 ranks and is small enough to run all of them in a test (and its variant for worlds of 3
// and 6 ranks), the micro Llama, the batch and grids the suites run on, and grid test names.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/model/model_config.h"
#include "axonn/parallel/shard_layout.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <span>
#include <string>
#include <vector>

namespace axonn::testing {

inline int world_size() {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

// The MPI suites run at np 1, 2, 4 and 8, and at 3 and 6: a world of threes, where the models below divide by 3
// (width 48, 6 query heads), the batch is 6, and the suites run on four grids that split over 3 (suite_grids).
inline bool world_of_threes() { return world_size() % 3 == 0; }

inline GptConfig micro_model() {
    GptConfig config = gpt_preset("gpt2-micro");
    config.vocab_size = 300;
    if (world_of_threes()) {
        config.n_head = 6;
        config.n_embd = 48;
    }
    return config;
}

// A small Llama with the same vocabulary: width 64, 8 query heads sharing 2 key/value heads (split over y = 2,
// replicated over y = 4 and 8), an MLP of 96, 2 layers, context 64; in a world of threes width 48 and 6 query heads.
inline LlamaConfig micro_llama() {
    LlamaConfig config = llama_preset("llama-tiny");
    config.vocab_size = 300;
    config.intermediate_size = 96;
    config.max_position_embeddings = 64;
    if (world_of_threes()) {
        config.hidden_size = 48;
        config.num_attention_heads = 6;
    }
    return config;
}

// The global batch of the suites' training steps: data × z must divide it.
inline int suite_batch() { return world_of_threes() ? 6 : 8; }

// The grids a suite runs a model on: every grid of the world that the model splits on for `batch`; in a world of
// threes only data=3 and z=3 (np 3), data=3 with y=2 and z=3 with x=2 (np 6), those the model splits on.
inline std::vector<GridShape> suite_grids(std::span<ParamDecl const> params, int batch) {
    if (!world_of_threes()) return valid_grids(params, world_size(), batch);
    std::vector<GridShape> grids;
    for (GridShape const& grid : {GridShape{.data = 3}, GridShape{.z = 3}, GridShape{.data = 3, .y = 2},
                                  GridShape{.z = 3, .x = 2}}) {
        if (grid.product() == world_size() && !grid_problem(params, grid, batch)) grids.push_back(grid);
    }
    return grids;
}

// Those of `grids` that split X: where the vocabulary's two layouts (--vocab-split) differ.
inline std::vector<GridShape> grids_splitting_x(std::vector<GridShape> const& grids) {
    std::vector<GridShape> splitting;
    for (GridShape const& grid : grids) {
        if (grid.x > 1) splitting.push_back(grid);
    }
    return splitting;
}
inline std::vector<GridShape> suite_grids(ModelConfig const& model, int batch) {
    return suite_grids(model.architecture().declarations, batch);
}

// "data2_z1_y2_x2": a GoogleTest-safe name for a grid.
inline std::string grid_test_name(GridShape const& g) {
    return "data" + std::to_string(g.data) + "_z" + std::to_string(g.z) + "_y" + std::to_string(g.y) + "_x" +
           std::to_string(g.x);
}

}  // namespace axonn::testing
