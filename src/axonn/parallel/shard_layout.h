// How each of GPT-2's parameter tensors is split over the process grid (AxoNN's "expert" layout),
// and where every element a process holds sits in the serial tensor.
//
// A parameter is L stacked [R, K] matrices (R = 1 for vectors). Its rows may be split over one axis and its
// columns over another; a Linear weight's [R/G_rows, K/G_cols] block is then flattened and cut into G_z chunks,
// one per Z rank. Local element i therefore has one serial index, which is all that initialisation (each rank
// generates exactly its slice from the counter-based RNG), gathering, and the gradient norm need.
//
//   tensor                        serial [out, in]   rows over   columns over   flattened over Z
//   wte (embedding = LM head)     [Vp, C]            Y           X              yes
//   qkvw, fcw (not transposed)    [3C | 4C, C]       Y           X              yes
//   attprojw, fcprojw (transposed)[C, C | 4C]        X           Y              yes
//   qkvb, fcb, as columns         [3C | 4C, 1]      Y           -              no: replicated over X and Z
//   LayerNorm gains and biases, attprojb, fcprojb, wpe's columns:  X             no: replicated over Y and Z
//
// qkvw's rows are [q | k | v]; split contiguously, a Y rank would get parts of different heads. Its row map
// instead gives rank y the q, k and v rows of its heads y·NH/G_y ..., in that order, so the local qkv
// activation is the serial layout of a model with NH/G_y heads and attention needs no change.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/gpt_config.h"
#include "axonn/model/gpt_parameters.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

enum class RowMap { contiguous, qkv_heads };

struct ShardSpec {
    Param id;
    std::int64_t layers;  // L for stacked tensors, else 1
    std::int64_t rows;    // R (1 for vectors)
    std::int64_t cols;    // K
    std::optional<Axis> row_axis;
    std::optional<Axis> col_axis;
    bool z_flattened;
    RowMap row_map;
};

// Where this process sits: the grid's sizes and its own coordinates.
struct GridPosition {
    GridShape shape;
    int data = 0, z = 0, y = 0, x = 0;
    int coord(Axis axis) const;
    static GridPosition of(ProcessGrid const& grid);
};

class ShardLayout {
public:
    ShardLayout(GptConfig const& config, GridPosition const& position);

    ShardSpec const& spec(Param id) const { return specs_[static_cast<int>(id)]; }
    std::int64_t local_numel(Param id) const;
    std::int64_t offset(Param id) const { return offsets_[static_cast<int>(id)]; }
    std::int64_t total() const { return total_; }
    // The Z-sharded weights come first in the flat buffer; from here on, the tensors replicated over Z.
    std::int64_t replicated_begin() const { return replicated_begin_; }
    // Storage order of the tensors in the flat buffer.
    std::array<Param, param_count> const& storage_order() const { return storage_order_; }

    // Index in the serial tensor (flattened, padding rows included) of local element i of tensor id.
    std::int64_t serial_index(Param id, std::int64_t i) const;
    // How many local elements from i on have consecutive serial indices (at least 1): what one read or one
    // message of a checkpoint can move. Costs one serial_index per local row it spans.
    std::int64_t serial_run(Param id, std::int64_t i) const;
    // Whether this process is the one that counts tensor id's elements (once per data replica) in norms and
    // gathers: coordinate 0 on every axis of the tensor-parallel block the tensor is replicated over.
    bool owns(Param id) const;
    // Local size of the [rows, cols] block of one layer before any Z split.
    std::int64_t block_rows(Param id) const;
    std::int64_t block_cols(Param id) const;

private:
    std::int64_t row_in_serial(ShardSpec const& spec, std::int64_t local_row) const;

    GptConfig config_;
    GridPosition position_;
    std::array<ShardSpec, param_count> specs_;
    std::array<std::int64_t, param_count> offsets_{};
    std::array<Param, param_count> storage_order_;
    std::int64_t replicated_begin_ = 0;
    std::int64_t total_ = 0;
};

// Why this model cannot run on this grid with this (global) batch, or nullopt if it can.
std::optional<std::string> grid_problem(GptConfig const& config, GridShape const& grid, int batch);
// Every grid of `world` ranks the model and batch allow, in grid_factorisations order.
std::vector<GridShape> valid_grids(GptConfig const& config, int world, int batch);
// Throws axonn::Error with one line: the problem and the valid grids for this model and world size.
void require_valid_grid(GptConfig const& config, GridShape const& grid, int world, int batch);

}  // namespace axonn
