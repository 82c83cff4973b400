// The table of GPT-2's parameter tensors: the single place where their names, shapes, roles in the parallel
// layout, initialisation and weight-decay class are declared (llm.c's lesson: derive every other table, including
// the tests', from this). Per-layer tensors are stacked with a leading L. How a role splits over the grid is
// parallel/shard_layout.h's concern.
#pragma once

#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/model/architecture.h"
#include "axonn/parallel/param_decl.h"
#include "axonn/parallel/shard_layout.h"

#include <optional>
#include <string>
#include <vector>

namespace axonn {

// Indices into gpt_parameters().
enum class Param : int {
    wte,       // [Vp, C]   token embedding, tied to the LM head; padding rows stay zero
    wpe,       // [maxT, C] position embedding
    ln1w,      // [L, C]
    ln1b,      // [L, C]
    qkvw,      // [L, 3C, C]
    qkvb,      // [L, 3C]
    attprojw,  // [L, C, C]
    attprojb,  // [L, C]
    ln2w,      // [L, C]
    ln2b,      // [L, C]
    fcw,       // [L, 4C, C]
    fcb,       // [L, 4C]
    fcprojw,   // [L, C, 4C]
    fcprojb,   // [L, C]
    lnfw,      // [C]
    lnfb,      // [C]
};
inline constexpr int param_count = 16;

// The 16 tensors of a model with this config, in Param order.
std::vector<ParamDecl> gpt_parameters(GptConfig const& config);


// The layout of those tensors at this grid position.
ShardLayout gpt_layout(GptConfig const& config, GridPosition const& position);

// grid_problem and valid_grids (parallel/shard_layout.h) for GPT-2 with this config.
std::optional<std::string> grid_problem(GptConfig const& config, GridShape const& grid, int batch);
std::vector<GridShape> valid_grids(GptConfig const& config, int world, int batch);

}  // namespace axonn
