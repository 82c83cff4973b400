// The table of Llama's parameter tensors: their names, shapes, roles in the parallel layout, initialisation and
// weight-decay class, declared once (as families/gpt2/gpt2_parameters.h does for GPT-2). Per-layer tensors are stacked with a
// leading L.
//   qkvw's rows are [q (NH heads) | k (NKV heads) | v (NKV heads)] of hs rows each: three row parts, so a Y rank
//   holds the rows of its query heads and of their key/value heads; with more Y ranks than key/value heads, each
//   key/value head is replicated on the G_y/NKV ranks whose query heads read it (as Megatron does), and the
//   decoder sums the replicas' gradients.
//   gateupw's rows are [gate (F) | up (F)]: two row parts, so a Y rank holds matching gate and up rows and SwiGLU
//   needs no communication.
#pragma once

#include "axonn/families/llama/llama_config.h"
#include "axonn/model/architecture.h"
#include "axonn/parallel/param_decl.h"
#include "axonn/parallel/shard_layout.h"

#include <optional>
#include <string>
#include <vector>

namespace axonn {

// Indices into llama_parameters().
enum class LlamaParam : int {
    embed,     // [Vp, C]      token embedding; padding rows stay zero
    ln1w,      // [L, C]       RMSNorm before attention
    qkvw,      // [L, (NH + 2·NKV)·hs, C]
    attprojw,  // [L, C, C]    o_proj
    ln2w,      // [L, C]       RMSNorm before the MLP
    gateupw,   // [L, 2F, C]   gate_proj and up_proj
    downw,     // [L, C, F]    down_proj
    lnfw,      // [C]          the final RMSNorm
    lm_head,   // [Vp, C]      untied
};
inline constexpr int llama_param_count = 9;

// The 9 tensors of a model with this config, in LlamaParam order.
std::vector<ParamDecl> llama_parameters(LlamaConfig const& config);


// grid_problem and valid_grids (parallel/shard_layout.h) for Llama with this config.
std::optional<std::string> grid_problem(LlamaConfig const& config, GridShape const& grid, int batch);
std::vector<GridShape> valid_grids(LlamaConfig const& config, int world, int batch);

}  // namespace axonn
