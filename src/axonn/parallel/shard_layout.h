// How each of a model's parameter tensors is split over the process grid (AxoNN's "expert" layout), and where
// every element a process holds sits in the serial tensor. The model declares its tensors (param_decl.h); the
// split follows from each one's role.
//
// A parameter is L stacked [R, K] matrices (R = 1 for vectors over X, K = 1 for vectors over Y). Its rows may be
// split over one axis and its columns over another; a Linear weight's [R/G_rows, K/G_cols] block is then
// flattened and cut into G_z chunks, one per Z rank. Local element i therefore has one serial index, which is all
// that initialisation (each rank generates exactly its slice from the counter-based RNG), gathering, checkpoints
// and the gradient norm need.
//
// Rows made of parts (RowPart) split part by part: with attention's [q | k | v] rows as three parts of heads, Y
// rank y holds the q, k and v rows of its heads y·NH/G_y ..., in that order, so its local qkv activation is the
// serial layout of a model with NH/G_y heads and attention needs no change.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/parallel/param_decl.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace axonn {

// A parameter's index in its model's declaration list: a plain int, or the model's own enum (families/gpt2/gpt2_parameters.h).
template <typename T>
concept ParamIndex = std::is_integral_v<T> || std::is_enum_v<T>;

// The split a parameter's role implies.
struct ShardSpec {
    std::int64_t layers;  // L for stacked tensors, else 1
    std::int64_t rows;    // R (1 for vectors over X)
    std::int64_t cols;    // K (1 for vectors over Y)
    std::optional<Axis> row_axis;
    std::optional<Axis> col_axis;
    bool z_flattened;
    // Rows split over row_axis, then each slice again over this axis (vocabulary_rows: Y, then X)
    std::optional<Axis> row_minor_axis = std::nullopt;
};
ShardSpec shard_spec(ParamDecl const& param);

// Where this process sits: the grid's sizes and its own coordinates.
struct GridPosition {
    GridShape shape;
    int data = 0, z = 0, y = 0, x = 0;
    int coord(Axis axis) const;
    static GridPosition of(ProcessGrid const& grid);
};

class ShardLayout {
public:
    ShardLayout(std::vector<ParamDecl> params, GridPosition const& position);

    int count() const { return static_cast<int>(params_.size()); }
    std::vector<ParamDecl> const& params() const { return params_; }
    ParamDecl const& param(ParamIndex auto id) const { return params_[index(id)]; }
    ShardSpec const& spec(ParamIndex auto id) const { return specs_[index(id)]; }
    std::int64_t local_numel(ParamIndex auto id) const { return local_numel_of(index(id)); }
    std::int64_t offset(ParamIndex auto id) const { return offsets_[index(id)]; }
    std::int64_t total() const { return total_; }
    // The Z-sharded weights come first in the flat buffer; from here on, the tensors replicated over Z.
    std::int64_t replicated_begin() const { return replicated_begin_; }
    // Storage order of the tensors in the flat buffer.
    std::vector<int> const& storage_order() const { return storage_order_; }

    // Index in the serial tensor (flattened, padding rows included) of local element i of tensor id.
    std::int64_t serial_index(ParamIndex auto id, std::int64_t i) const { return serial_index_of(index(id), i); }
    // How many local elements from i on have consecutive serial indices (at least 1): what one read or one
    // message of a checkpoint can move. Costs one serial_index per local row it spans.
    std::int64_t serial_run(ParamIndex auto id, std::int64_t i) const { return serial_run_of(index(id), i); }
    // Whether this process is the one that counts tensor id's elements (once per data replica) in norms and
    // gathers: coordinate 0 on every axis of the tensor-parallel block the tensor is replicated over.
    bool owns(ParamIndex auto id) const { return owns_of(index(id)); }
    // Local elements whose rows are replicas (a replicable row part held by `factor` ranks of the row axis), as
    // ranges [begin, end); empty when none. Every replica holds its rows' elements at the same local indices. The
    // Z ranks hold different chunks of a block, so different counts: `capacity` is the largest, which a buffer
    // that every rank of the grid sums the same way needs.
    struct ReplicatedRuns {
        int factor = 1;
        std::vector<std::pair<std::int64_t, std::int64_t>> runs;
        std::int64_t capacity = 0;
    };
    ReplicatedRuns replicated_runs(ParamIndex auto id) const { return replicated_runs_of(index(id)); }
    // Local size of the [rows, cols] block of one layer before any Z split.
    std::int64_t block_rows(ParamIndex auto id) const { return block_rows_of(index(id)); }
    std::int64_t block_cols(ParamIndex auto id) const { return block_cols_of(index(id)); }

private:
    static int index(ParamIndex auto id) { return static_cast<int>(id); }
    std::int64_t local_numel_of(int id) const;
    std::int64_t serial_index_of(int id, std::int64_t i) const;
    std::int64_t serial_run_of(int id, std::int64_t i) const;
    bool owns_of(int id) const;
    std::int64_t block_rows_of(int id) const;
    std::int64_t block_cols_of(int id) const;
    std::int64_t row_in_serial(int id, std::int64_t local_row) const;
    ReplicatedRuns replicated_runs_of(int id) const;

    std::vector<ParamDecl> params_;
    std::vector<ShardSpec> specs_;
    std::vector<std::vector<RowPart>> parts_;  // each parameter's row parts (one part of single rows if undeclared)
    std::vector<std::int64_t> block_rows_, block_cols_;
    GridPosition position_;
    std::vector<std::int64_t> offsets_;
    std::vector<int> storage_order_;
    std::int64_t replicated_begin_ = 0;
    std::int64_t total_ = 0;
};

// A contiguous range of the flat parameter buffer that AdamW updates with one weight-decay setting.
struct ParamSegment {
    std::int64_t offset;
    std::int64_t numel;
    bool decay;
};
// One segment per tensor of the layout, decayed as declared: what AdamW (train/optimizer.h) takes.
std::vector<ParamSegment> param_segments(ShardLayout const& layout);

// Why a model with these parameters cannot run on this grid with this (global) batch, or nullopt if it can. No
// batch: any batch, as generation shares its prompts out over the replicas whatever their number.
std::optional<std::string> grid_problem(std::span<ParamDecl const> params, GridShape const& grid,
                                        std::optional<int> batch);
// A model's parameters as laid out on a grid: a layout may differ from grid to grid (the vocabulary's split).
using GridLayout = std::function<std::vector<ParamDecl>(GridShape const&)>;
// Every grid of `world` ranks the parameters and batch allow, in grid_factorisations order.
std::vector<GridShape> valid_grids(GridLayout const& layout, int world, std::optional<int> batch);
std::vector<GridShape> valid_grids(std::span<ParamDecl const> params, int world, std::optional<int> batch);
// Throws axonn::Error with one line: the problem and the valid grids, each with its own layout, for this world size.
void require_valid_grid(GridLayout const& layout, GridShape const& grid, int world, std::optional<int> batch);
void require_valid_grid(std::span<ParamDecl const> params, GridShape const& grid, int world,
                        std::optional<int> batch);

}  // namespace axonn
