#include "axonn/parallel/shard_layout.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace axonn {
namespace {

std::array<ShardSpec, param_count> shard_specs(GptConfig const& config) {
    std::int64_t const L = config.n_layer, C = config.n_embd, Vp = config.padded_vocab_size();
    constexpr auto X = Axis::x, Y = Axis::y;
    std::optional<Axis> const none;
    // Each spec in Param order: id, layers, rows, cols, row axis, column axis, flattened over Z, row map.
    return {{
        {Param::wte, 1, Vp, C, Y, X, true, RowMap::contiguous},
        {Param::wpe, 1, config.max_seq, C, none, X, false, RowMap::contiguous},
        {Param::ln1w, L, 1, C, none, X, false, RowMap::contiguous},
        {Param::ln1b, L, 1, C, none, X, false, RowMap::contiguous},
        {Param::qkvw, L, 3 * C, C, Y, X, true, RowMap::qkv_heads},
        // The bias of a layer whose outputs (the weight's rows) are split over Y is a column [N, 1], split and
        // mapped like those rows.
        {Param::qkvb, L, 3 * C, 1, Y, none, false, RowMap::qkv_heads},
        {Param::attprojw, L, C, C, X, Y, true, RowMap::contiguous},
        {Param::attprojb, L, 1, C, none, X, false, RowMap::contiguous},
        {Param::ln2w, L, 1, C, none, X, false, RowMap::contiguous},
        {Param::ln2b, L, 1, C, none, X, false, RowMap::contiguous},
        {Param::fcw, L, 4 * C, C, Y, X, true, RowMap::contiguous},
        {Param::fcb, L, 4 * C, 1, Y, none, false, RowMap::contiguous},
        {Param::fcprojw, L, C, 4 * C, X, Y, true, RowMap::contiguous},
        {Param::fcprojb, L, 1, C, none, X, false, RowMap::contiguous},
        {Param::lnfw, 1, 1, C, none, X, false, RowMap::contiguous},
        {Param::lnfb, 1, 1, C, none, X, false, RowMap::contiguous},
    }};
}

int axis_size(GridShape const& shape, std::optional<Axis> axis) { return axis ? shape.size(*axis) : 1; }

}  // namespace

int GridPosition::coord(Axis axis) const {
    switch (axis) {
        case Axis::data: return data;
        case Axis::z: return z;
        case Axis::y: return y;
        case Axis::x: return x;
    }
    return 0;
}

GridPosition GridPosition::of(ProcessGrid const& grid) {
    return {grid.shape(), grid.coord(Axis::data), grid.coord(Axis::z), grid.coord(Axis::y), grid.coord(Axis::x)};
}

ShardLayout::ShardLayout(GptConfig const& config, GridPosition const& position)
    : config_(config), position_(position), specs_(shard_specs(config)) {
    // Z-sharded weights first, so that the tensors replicated over Z form one range for one all-reduce.
    int next = 0;
    for (bool z_flattened : {true, false}) {
        if (!z_flattened) replicated_begin_ = total_;
        for (auto const& spec : specs_) {
            if (spec.z_flattened != z_flattened) continue;
            storage_order_[next++] = spec.id;
            offsets_[static_cast<int>(spec.id)] = total_;
            total_ += local_numel(spec.id);
        }
    }
}

std::int64_t ShardLayout::block_rows(Param id) const {
    return spec(id).rows / axis_size(position_.shape, spec(id).row_axis);
}
std::int64_t ShardLayout::block_cols(Param id) const {
    return spec(id).cols / axis_size(position_.shape, spec(id).col_axis);
}

std::int64_t ShardLayout::local_numel(Param id) const {
    std::int64_t const block = block_rows(id) * block_cols(id);
    return spec(id).layers * (spec(id).z_flattened ? block / position_.shape.z : block);
}

std::int64_t ShardLayout::row_in_serial(ShardSpec const& spec, std::int64_t local_row) const {
    std::int64_t const rows_here = block_rows(spec.id);
    int const row_coord = spec.row_axis ? position_.coord(*spec.row_axis) : 0;
    if (spec.row_map == RowMap::contiguous) return row_coord * rows_here + local_row;
    // qkv_heads: local rows are [q | k | v] of this rank's heads, each part C/G_y rows.
    std::int64_t const part_rows = rows_here / 3;
    std::int64_t const part = local_row / part_rows;
    return part * config_.n_embd + row_coord * part_rows + local_row % part_rows;
}

std::int64_t ShardLayout::serial_index(Param id, std::int64_t i) const {
    ShardSpec const& s = spec(id);
    std::int64_t const rows_here = block_rows(id), cols_here = block_cols(id);
    std::int64_t const per_layer = s.z_flattened ? rows_here * cols_here / position_.shape.z : rows_here * cols_here;
    std::int64_t const layer = i / per_layer;
    std::int64_t const in_block = (s.z_flattened ? position_.z * per_layer : 0) + i % per_layer;
    std::int64_t const row = row_in_serial(s, in_block / cols_here);
    int const col_coord = s.col_axis ? position_.coord(*s.col_axis) : 0;
    std::int64_t const col = col_coord * cols_here + in_block % cols_here;
    return layer * s.rows * s.cols + row * s.cols + col;
}

std::int64_t ShardLayout::serial_run(Param id, std::int64_t i) const {
    ShardSpec const& s = spec(id);
    std::int64_t const n = local_numel(id), cols_here = block_cols(id);
    std::int64_t const per_layer = s.z_flattened ? block_rows(id) * cols_here / position_.shape.z
                                                 : block_rows(id) * cols_here;
    // Local elements from j that share one row of one layer: consecutive in the serial tensor by construction.
    auto const segment = [&](std::int64_t j) {
        std::int64_t const within = j % per_layer;
        std::int64_t const in_block = (s.z_flattened ? position_.z * per_layer : 0) + within;
        return std::min(cols_here - in_block % cols_here, per_layer - within);
    };
    std::int64_t const first = serial_index(id, i);
    std::int64_t run = std::min(segment(i), n - i);
    while (i + run < n && serial_index(id, i + run) == first + run) run += std::min(segment(i + run), n - i - run);
    return run;
}

bool ShardLayout::owns(Param id) const {
    ShardSpec const& s = spec(id);
    auto const replicated = [&s](Axis axis) {
        return s.row_axis != axis && s.col_axis != axis && !(axis == Axis::z && s.z_flattened);
    };
    for (Axis axis : {Axis::z, Axis::y, Axis::x}) {
        if (replicated(axis) && position_.coord(axis) != 0) return false;
    }
    return true;
}

std::optional<std::string> grid_problem(GptConfig const& config, GridShape const& grid, int batch) {
    int const C = config.n_embd, Vp = config.padded_vocab_size();
    if (C % grid.x != 0) return fmt::format("x = {} does not divide the width {}", grid.x, C);
    if (C % grid.y != 0) return fmt::format("y = {} does not divide the width {}", grid.y, C);
    if (config.n_head % grid.y != 0) {
        return fmt::format("y = {} does not divide the {} attention heads (heads are split over Y)", grid.y,
                           config.n_head);
    }
    if (Vp % grid.y != 0) return fmt::format("y = {} does not divide the padded vocabulary {}", grid.y, Vp);
    std::int64_t const block = static_cast<std::int64_t>(C / grid.y) * (C / grid.x);
    if (block % grid.z != 0) {
        return fmt::format("z = {} does not divide a weight block of {} x {}", grid.z, C / grid.y, C / grid.x);
    }
    if (static_cast<std::int64_t>(Vp / grid.y) * (C / grid.x) % grid.z != 0) {
        return fmt::format("z = {} does not divide the embedding block of {} x {}", grid.z, Vp / grid.y, C / grid.x);
    }
    if (batch % (grid.data * grid.z) != 0) {
        return fmt::format("data x z = {} does not divide the batch of {} sequences", grid.data * grid.z, batch);
    }
    return std::nullopt;
}

std::vector<GridShape> valid_grids(GptConfig const& config, int world, int batch) {
    std::vector<GridShape> grids;
    for (auto const& grid : grid_factorisations(world)) {
        if (!grid_problem(config, grid, batch)) grids.push_back(grid);
    }
    return grids;
}

void require_valid_grid(GptConfig const& config, GridShape const& grid, int world, int batch) {
    std::string problem;
    if (grid.product() != world) {
        problem = fmt::format("grid {} has {} ranks but the job has {}", grid.to_string(), grid.product(), world);
    } else if (auto const reason = grid_problem(config, grid, batch)) {
        problem = fmt::format("grid {} does not fit: {}", grid.to_string(), *reason);
    } else {
        return;
    }
    std::string valid;
    for (auto const& candidate : valid_grids(config, world, batch)) {
        valid += (valid.empty() ? "" : " | ") + candidate.to_string();
    }
    fail("{}; valid grids for {} ranks, this model and batch {}: {}", problem, world, batch,
         valid.empty() ? "none (change the world size or the batch)" : valid);
}

}  // namespace axonn
