// A model's parameters as the parallel layers see them: each tensor declared once with its role in AxoNN's
// layout, from which its shards (shard_layout.h), gradient groups, norm, initialisation (parameter_init.h),
// checkpoint slices and the traffic and memory models all follow. A model declares its list once
// (families/gpt2/gpt2_parameters.h for GPT-2); nothing here knows which model it is.
#pragma once

#include "axonn/core/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace axonn {

// How a tensor splits over the grid, by what it is in the parallel layers:
//   role               one layer's block            rows over   columns over   flattened over Z
//   normal_linear      [out, in] of a normal Linear  Y           X              yes
//   transposed_linear  [out, in] of a transposed one X           Y              yes
//   vocabulary_block   [Vp, C] embedding / LM head   Y           X              yes
//   vocabulary_rows    [Vp, C] embedding / LM head   Y, then X   -              yes
//                      (the vocabulary over the X·Y plane: row slice y·G_x + x, every column)
//   vector_over_x      [R, K] of vectors on the      -           X              no: replicated over Y and Z
//                      residual stream (R = 1: norm gains, a transposed Linear's bias; R = maxT: positions)
//   vector_over_y      [N, 1]: a normal Linear's     Y           -              no: replicated over X and Z
//                      bias, split like its rows
//   replicated         whole on every rank           -           -              no
enum class ShardRole {
    normal_linear,
    transposed_linear,
    vocabulary_block,
    vocabulary_rows,
    vector_over_x,
    vector_over_y,
    replicated
};

// How the embedding and the LM head split their vocabulary (parallel/vocab_parallel.h): by rows over Y with the
// columns over X (AxoNN's layout: vocabulary_block), or by rows over the whole X·Y plane with every column on each
// rank (vocabulary_rows), which moves a token's hidden state over X instead of its logits; or, for a run, the one
// of the two that moves fewer bytes over X on its grid (automatic: resolved_vocab_split, parallel/vocab_parallel.h).
enum class VocabSplit { xy, y, automatic };

enum class ParamInit { normal, ones, zeros };

// A run of rows that splits over the row axis on its own, in whole units: attention's [q | k | v] rows are three
// parts of NH heads of hs rows each, so a Y rank holds the q, k and v rows of the same heads.
struct RowPart {
    std::int64_t units;      // how many (heads, ...); the row axis must divide it
    std::int64_t unit_rows;  // rows per unit
    std::string unit_name;   // what a unit is, for errors: "attention heads"
    // A row axis with more ranks than units (a multiple of them) may instead give each unit to G/units ranks, as
    // Megatron replicates grouped-query attention's key/value heads: rank r holds unit r / (G/units). The
    // replicas' gradients are partial sums that the model adds up (ShardLayout::replicated_runs).
    bool replicable = false;
};

struct ParamDecl {
    std::string name;        // as checkpoints name it
    Shape shape;             // serial, as checkpoints store it: [layers,] rows[, cols]
    std::int64_t layers;     // stacked copies, one per layer (1: not stacked)
    std::int64_t rows;       // one layer's [rows, cols] block (rows 1 for a vector over X, cols 1 over Y)
    std::int64_t cols;
    ShardRole role;
    std::vector<RowPart> row_parts;  // empty: one part of `rows` units of one row
    ParamInit init;
    float init_std = 0;      // for ParamInit::normal
    bool decay = false;      // AdamW's weight decay applies
    std::int64_t real_rows = -1;  // rows from here on are padding: zero, never trained in effect (-1: none)
};

std::string vocab_split_name(VocabSplit split);  // "xy", "y", "auto"
// The declarations with every vocabulary tensor in the role of `split` (xy or y).
std::vector<ParamDecl> with_vocab_split(std::vector<ParamDecl> params, VocabSplit split);

}  // namespace axonn
