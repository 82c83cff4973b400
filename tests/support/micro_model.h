// What the MPI suites share: the world size, gpt2-micro with a 300-word vocabulary, the model that splits
// on every grid of up to 8 ranks and is small enough to run all of them in a test, and grid test names.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/llama/llama_config.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

namespace axonn::testing {

inline int world_size() {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

inline GptConfig micro_model() {
    GptConfig config = gpt_preset("gpt2-micro");
    config.vocab_size = 300;
    return config;
}

// A small Llama with the same vocabulary: width 64, 8 query heads sharing 2 key/value heads (split over y = 2,
// replicated over y = 4 and 8), an MLP of 96, 2 layers, context 64.
inline LlamaConfig micro_llama() {
    LlamaConfig config = llama_preset("llama-tiny");
    config.vocab_size = 300;
    config.intermediate_size = 96;
    config.max_position_embeddings = 64;
    return config;
}

// "data2_z1_y2_x2": a GoogleTest-safe name for a grid.
inline std::string grid_test_name(GridShape const& g) {
    return "data" + std::to_string(g.data) + "_z" + std::to_string(g.z) + "_y" + std::to_string(g.y) + "_x" +
           std::to_string(g.x);
}

}  // namespace axonn::testing
