#include "axonn/parallel/shard_layout.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace axonn {
namespace {

int axis_size(GridShape const& shape, std::optional<Axis> axis) { return axis ? shape.size(*axis) : 1; }

// How many slices a parameter's rows split in, and which one a rank holds: over the row axis, then the minor one.
int row_slices(GridShape const& shape, ShardSpec const& spec) {
    return axis_size(shape, spec.row_axis) * axis_size(shape, spec.row_minor_axis);
}
int row_slice(GridPosition const& position, ShardSpec const& spec) {
    int const major = spec.row_axis ? position.coord(*spec.row_axis) : 0;
    int const minor = spec.row_minor_axis ? position.coord(*spec.row_minor_axis) : 0;
    return major * axis_size(position.shape, spec.row_minor_axis) + minor;
}

char axis_letter(Axis axis) {
    switch (axis) {
        case Axis::data: return 'd';
        case Axis::z: return 'z';
        case Axis::y: return 'y';
        case Axis::x: return 'x';
    }
    return '?';
}

// The parts a parameter's rows split in: its declared ones, or one part of single rows.
std::vector<RowPart> row_parts(ParamDecl const& param) {
    if (!param.row_parts.empty()) return param.row_parts;
    return {{param.rows, 1, "rows"}};
}

// Whether a row axis of G ranks splits the part (each rank a 1/G of its units) or replicates it (each unit on
// G/units ranks), and the rows each rank holds and where they start.
bool replicated(RowPart const& part, int G) { return part.units % G != 0 && part.replicable && G % part.units == 0; }
std::int64_t part_rows_here(RowPart const& part, int G) {
    return replicated(part, G) ? part.unit_rows : part.units / G * part.unit_rows;
}
std::int64_t part_first_row(RowPart const& part, int G, int coord) {
    return replicated(part, G) ? coord / (G / part.units) * part.unit_rows : coord * part_rows_here(part, G);
}
// The rows of one layer's block on a rank of a row axis of G ranks.
std::int64_t block_rows_here(ParamDecl const& param, int G) {
    std::int64_t rows = 0;
    for (RowPart const& part : row_parts(param)) rows += part_rows_here(part, G);
    return rows;
}

// Why the row axis cannot split the parameter's rows, its column axis its columns, or Z its block.
std::optional<std::string> split_problem(ParamDecl const& param, GridShape const& grid) {
    ShardSpec const spec = shard_spec(param);
    if (spec.row_axis) {
        int const parts = row_slices(grid, spec);
        std::string axes(1, axis_letter(*spec.row_axis));
        if (spec.row_minor_axis) axes += fmt::format("·{}", axis_letter(*spec.row_minor_axis));
        for (RowPart const& part : row_parts(param)) {
            if (part.units % parts != 0 && !replicated(part, parts)) {
                return fmt::format("{} = {} does not divide the {} {} of {}", axes, parts, part.units, part.unit_name,
                                   param.name);
            }
        }
    }
    int const col_parts = axis_size(grid, spec.col_axis);
    if (spec.col_axis && spec.cols % col_parts != 0) {
        return fmt::format("{} = {} does not divide the {} columns of {}", axis_letter(*spec.col_axis), col_parts,
                           spec.cols, param.name);
    }
    std::int64_t const block_rows = block_rows_here(param, row_slices(grid, spec)),
                       block_cols = spec.cols / col_parts;
    if (spec.z_flattened && block_rows * block_cols % grid.z != 0) {
        return fmt::format("z = {} does not divide the {} x {} block of {}", grid.z, block_rows, block_cols,
                           param.name);
    }
    return std::nullopt;
}

}  // namespace

ShardSpec shard_spec(ParamDecl const& param) {
    constexpr auto X = Axis::x, Y = Axis::y;
    std::optional<Axis> const none;
    switch (param.role) {
        case ShardRole::normal_linear:
        case ShardRole::vocabulary_block: return {param.layers, param.rows, param.cols, Y, X, true};
        case ShardRole::vocabulary_rows: return {param.layers, param.rows, param.cols, Y, none, true, X};
        case ShardRole::transposed_linear: return {param.layers, param.rows, param.cols, X, Y, true};
        case ShardRole::vector_over_x: return {param.layers, param.rows, param.cols, none, X, false};
        case ShardRole::vector_over_y: return {param.layers, param.rows, param.cols, Y, none, false};
        case ShardRole::replicated: return {param.layers, param.rows, param.cols, none, none, false};
    }
    AXONN_INVARIANT(false, "parameter {} has no shard role", param.name);
    return {};
}

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

ShardLayout::ShardLayout(std::vector<ParamDecl> params, GridPosition const& position)
    : params_(std::move(params)), position_(position), offsets_(params_.size(), 0) {
    // The row parts and block sizes, once: serial_index runs per element or per row in initialisation, gathers and
    // checkpoints, and must not rebuild them each time.
    for (ParamDecl const& param : params_) {
        ShardSpec const spec = shard_spec(param);
        specs_.push_back(spec);
        parts_.push_back(row_parts(param));
        block_rows_.push_back(block_rows_here(param, row_slices(position_.shape, spec)));
        block_cols_.push_back(spec.cols / axis_size(position_.shape, spec.col_axis));
    }
    // Z-sharded weights first, so that the tensors replicated over Z form one range for one all-reduce.
    for (bool z_flattened : {true, false}) {
        if (!z_flattened) replicated_begin_ = total_;
        for (int id = 0; id < count(); ++id) {
            if (specs_[id].z_flattened != z_flattened) continue;
            storage_order_.push_back(id);
            offsets_[id] = total_;
            total_ += local_numel_of(id);
        }
    }
}

std::int64_t ShardLayout::block_rows_of(int id) const { return block_rows_[id]; }
std::int64_t ShardLayout::block_cols_of(int id) const { return block_cols_[id]; }

std::int64_t ShardLayout::local_numel_of(int id) const {
    std::int64_t const block = block_rows_of(id) * block_cols_of(id);
    return specs_[id].layers * (specs_[id].z_flattened ? block / position_.shape.z : block);
}

std::int64_t ShardLayout::row_in_serial(int id, std::int64_t local_row) const {
    ShardSpec const& spec = specs_[id];
    int const parts = row_slices(position_.shape, spec);
    int const coord = row_slice(position_, spec);
    // Local rows are this rank's slice (or replica) of each part in turn.
    std::int64_t part_begin = 0;
    for (RowPart const& part : parts_[id]) {
        std::int64_t const rows_here = part_rows_here(part, parts);
        if (local_row < rows_here) return part_begin + part_first_row(part, parts, coord) + local_row;
        local_row -= rows_here;
        part_begin += part.units * part.unit_rows;
    }
    AXONN_INVARIANT(false, "row {} beyond parameter {}'s local rows", local_row, params_[id].name);
    return 0;
}

std::int64_t ShardLayout::serial_index_of(int id, std::int64_t i) const {
    ShardSpec const& s = specs_[id];
    std::int64_t const rows_here = block_rows_of(id), cols_here = block_cols_of(id);
    std::int64_t const per_layer = s.z_flattened ? rows_here * cols_here / position_.shape.z : rows_here * cols_here;
    std::int64_t const layer = i / per_layer;
    std::int64_t const in_block = (s.z_flattened ? position_.z * per_layer : 0) + i % per_layer;
    std::int64_t const row = row_in_serial(id, in_block / cols_here);
    int const col_coord = s.col_axis ? position_.coord(*s.col_axis) : 0;
    std::int64_t const col = col_coord * cols_here + in_block % cols_here;
    return layer * s.rows * s.cols + row * s.cols + col;
}

std::int64_t ShardLayout::serial_run_of(int id, std::int64_t i) const {
    ShardSpec const& s = specs_[id];
    std::int64_t const n = local_numel_of(id), cols_here = block_cols_of(id);
    std::int64_t const per_layer = s.z_flattened ? block_rows_of(id) * cols_here / position_.shape.z
                                                 : block_rows_of(id) * cols_here;
    // Local elements from j that share one row of one layer: consecutive in the serial tensor by construction.
    auto const segment = [&](std::int64_t j) {
        std::int64_t const within = j % per_layer;
        std::int64_t const in_block = (s.z_flattened ? position_.z * per_layer : 0) + within;
        return std::min(cols_here - in_block % cols_here, per_layer - within);
    };
    std::int64_t const first = serial_index_of(id, i);
    std::int64_t run = std::min(segment(i), n - i);
    while (i + run < n && serial_index_of(id, i + run) == first + run) run += std::min(segment(i + run), n - i - run);
    return run;
}

ShardLayout::ReplicatedRuns ShardLayout::replicated_runs_of(int id) const {
    ShardSpec const& s = specs_[id];
    ReplicatedRuns result;
    if (!s.row_axis) return result;
    int const G = row_slices(position_.shape, s);
    std::int64_t const cols_here = block_cols_of(id);
    // The replicated rows of a layer's block, as ranges of its flattened elements.
    std::vector<std::pair<std::int64_t, std::int64_t>> replica_ranges;
    std::int64_t row = 0;
    for (RowPart const& part : parts_[id]) {
        std::int64_t const rows_here = part_rows_here(part, G);
        if (replicated(part, G)) {
            result.factor = G / static_cast<int>(part.units);
            replica_ranges.emplace_back(row * cols_here, (row + rows_here) * cols_here);
        }
        row += rows_here;
    }
    if (result.factor == 1) return result;
    // Each Z rank holds one chunk of every layer's block: the ranges that fall in it, layer by layer.
    int const chunks = s.z_flattened ? position_.shape.z : 1;
    std::int64_t const chunk = block_rows_of(id) * cols_here / chunks;
    auto const in_chunk = [&](int z, std::pair<std::int64_t, std::int64_t> range) {
        return std::pair{std::max(range.first, z * chunk) - z * chunk, std::min(range.second, (z + 1) * chunk) - z * chunk};
    };
    int const z_here = s.z_flattened ? position_.z : 0;
    for (std::int64_t layer = 0; layer < s.layers; ++layer) {
        for (auto const& range : replica_ranges) {
            auto const [begin, end] = in_chunk(z_here, range);
            if (begin < end) result.runs.emplace_back(layer * chunk + begin, layer * chunk + end);
        }
    }
    for (int z = 0; z < chunks; ++z) {
        std::int64_t per_layer = 0;
        for (auto const& range : replica_ranges) {
            auto const [begin, end] = in_chunk(z, range);
            per_layer += std::max<std::int64_t>(0, end - begin);
        }
        result.capacity = std::max(result.capacity, per_layer * s.layers);
    }
    return result;
}

bool ShardLayout::owns_of(int id) const {
    ShardSpec const& s = specs_[id];
    auto const replicated = [&s](Axis axis) {
        return s.row_axis != axis && s.row_minor_axis != axis && s.col_axis != axis &&
               !(axis == Axis::z && s.z_flattened);
    };
    for (Axis axis : {Axis::z, Axis::y, Axis::x}) {
        if (replicated(axis) && position_.coord(axis) != 0) return false;
    }
    return true;
}

std::vector<ParamSegment> param_segments(ShardLayout const& layout) {
    std::vector<ParamSegment> segments;
    for (int id = 0; id < layout.count(); ++id) {
        segments.push_back({layout.offset(id), layout.local_numel(id), layout.param(id).decay});
    }
    return segments;
}

std::optional<std::string> grid_problem(std::span<ParamDecl const> params, GridShape const& grid,
                                        std::optional<int> batch) {
    for (ParamDecl const& param : params) {
        if (auto problem = split_problem(param, grid)) return problem;
    }
    if (batch && *batch % grid.batch_replicas() != 0) {
        return fmt::format("data x z = {} does not divide the batch of {} sequences", grid.batch_replicas(), *batch);
    }
    return std::nullopt;
}

namespace {

// The one layout of `params` on every grid.
GridLayout fixed_layout(std::span<ParamDecl const> params) {
    return [declarations = std::vector<ParamDecl>(params.begin(), params.end())](GridShape const&) {
        return declarations;
    };
}

}  // namespace

std::vector<GridShape> valid_grids(GridLayout const& layout, int world, std::optional<int> batch) {
    std::vector<GridShape> grids;
    for (auto const& grid : grid_factorisations(world)) {
        if (!grid_problem(layout(grid), grid, batch)) grids.push_back(grid);
    }
    return grids;
}

std::vector<GridShape> valid_grids(std::span<ParamDecl const> params, int world, std::optional<int> batch) {
    return valid_grids(fixed_layout(params), world, batch);
}

void require_valid_grid(std::span<ParamDecl const> params, GridShape const& grid, int world,
                        std::optional<int> batch) {
    require_valid_grid(fixed_layout(params), grid, world, batch);
}

void require_valid_grid(GridLayout const& layout, GridShape const& grid, int world, std::optional<int> batch) {
    std::string problem;
    if (grid.product() != world) {
        problem = fmt::format("grid {} has {} ranks but the job has {}", grid.to_string(), grid.product(), world);
    } else if (auto const reason = grid_problem(layout(grid), grid, batch)) {
        problem = fmt::format("grid {} does not fit: {}", grid.to_string(), *reason);
    } else {
        return;
    }
    std::string valid;
    for (auto const& candidate : valid_grids(layout, world, batch)) {
        valid += (valid.empty() ? "" : " | ") + candidate.to_string();
    }
    if (!valid.empty()) {
        fail("{}; valid grids for {} ranks, this model{}: {}", problem, world,
             batch ? fmt::format(" and batch {}", *batch) : "", valid);
    }
    fail("{}; no grid of {} ranks fits this model{}: change the world size{}", problem, world,
         batch ? fmt::format(" and batch {}", *batch) : "", batch ? " or the batch" : "");
}

}  // namespace axonn
