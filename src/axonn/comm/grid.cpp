// ProcessGrid: the rank → coordinate map, the group communicators, and the parsers of --grid and --grid-order.
#include "axonn/comm/grid.h"

#include "axonn/comm/node_placement.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>

namespace axonn {
namespace {

constexpr std::array<Axis, 4> all_axes = {Axis::data, Axis::z, Axis::y, Axis::x};
constexpr char const* grid_form = "data=2,z=1,y=2,x=2";

std::size_t index(Axis axis) { return static_cast<std::size_t>(axis); }

MPI_Comm duplicate(MPI_Comm comm) {
    MPI_Comm copy = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &copy);
    return copy;
}

std::vector<std::string> split_on_commas(std::string const& text) {
    std::vector<std::string> parts;
    std::size_t begin = 0;
    for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', begin)) {
        parts.push_back(text.substr(begin, comma - begin));
        begin = comma + 1;
    }
    parts.push_back(text.substr(begin));
    return parts;
}

std::optional<Axis> find_axis(std::string const& name) {
    for (Axis axis : all_axes) {
        if (axis_name(axis) == name) {
            return axis;
        }
    }
    return std::nullopt;
}

std::optional<int> parse_positive_int(std::string const& text) {
    int value = 0;
    auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || value < 1) {
        return std::nullopt;
    }
    return value;
}

// GridShape's field for an axis; a template so that it serves both the const and the mutable shape.
template <typename Shape>
auto& size_of(Shape& shape, Axis axis) {
    switch (axis) {
        case Axis::data: return shape.data;
        case Axis::z: return shape.z;
        case Axis::y: return shape.y;
        case Axis::x: return shape.x;
    }
    throw InternalError(fmt::format("unknown axis {}", static_cast<int>(axis)));
}

}  // namespace

std::string axis_name(Axis axis) {
    switch (axis) {
        case Axis::data: return "data";
        case Axis::z: return "z";
        case Axis::y: return "y";
        case Axis::x: return "x";
    }
    return "unknown";
}

std::string group_name(Group group) {
    switch (group) {
        case Group::data: return "data";
        case Group::z: return "z";
        case Group::y: return "y";
        case Group::x: return "x";
        case Group::z_prefetch: return "z_prefetch";
        case Group::tensor: return "tensor";
        case Group::world: return "world";
    }
    return "unknown";
}

int GridShape::size(Axis axis) const { return size_of(*this, axis); }

int GridShape::size(Group group) const {
    int members = 1;
    for (Axis axis : group_axes(group)) members *= size(axis);
    return members;
}

std::vector<Axis> group_axes(Group group) {
    switch (group) {
        case Group::data: return {Axis::data};
        case Group::z:
        case Group::z_prefetch: return {Axis::z};
        case Group::y: return {Axis::y};
        case Group::x: return {Axis::x};
        case Group::tensor: return {Axis::z, Axis::y, Axis::x};
        case Group::world: return {Axis::data, Axis::z, Axis::y, Axis::x};
    }
    return {};
}

int GridShape::product() const {
    std::int64_t const product = std::int64_t{data} * z * y * x;
    AXONN_REQUIRE(product <= INT_MAX, "the grid {} has {} ranks, more than {}: fix --grid", to_string(), product,
                  INT_MAX);
    return static_cast<int>(product);
}

std::string GridShape::to_string() const { return fmt::format("data={},z={},y={},x={}", data, z, y, x); }

GridShape GridShape::parse(std::string const& spec) {
    GridShape shape;
    std::array<bool, 4> seen{};
    for (std::string const& part : split_on_commas(spec)) {
        std::size_t const equals = part.find('=');
        AXONN_REQUIRE(equals != std::string::npos, "grid part '{}' of '{}' is not axis=size: expected the form {}",
                      part, spec, grid_form);
        std::string const name = part.substr(0, equals);
        std::optional<Axis> const axis = find_axis(name);
        AXONN_REQUIRE(axis.has_value(), "unknown grid axis '{}' in '{}': the axes are data, z, y and x, as in {}", name,
                      spec, grid_form);
        AXONN_REQUIRE(!seen[index(*axis)], "grid axis '{}' is given twice in '{}': expected the form {}", name, spec,
                      grid_form);
        seen[index(*axis)] = true;
        std::string const text = part.substr(equals + 1);
        std::optional<int> const size = parse_positive_int(text);
        // Digits alone, not all zeros, that do not fit an int: a count of ranks beyond any machine.
        bool const too_large = !size.has_value() && text.find_first_not_of("0123456789") == std::string::npos &&
                               text.find_first_not_of('0') != std::string::npos;
        AXONN_REQUIRE(!too_large,
                      "grid size {} of axis {} in '{}' is too large (at most {} ranks): expected the form {}", text,
                      name, spec, std::numeric_limits<int>::max(), grid_form);
        AXONN_REQUIRE(size.has_value(),
                      "grid size '{}' of axis {} in '{}' is not a positive integer: expected the form {}", text,
                      name, spec, grid_form);
        size_of(shape, *axis) = *size;
    }
    return shape;
}

std::ostream& operator<<(std::ostream& out, GridShape const& shape) { return out << shape.to_string(); }

std::vector<GridShape> grid_factorisations(int world) {
    AXONN_REQUIRE(world >= 1, "cannot factorise a world of {} ranks: it must be at least 1", world);
    std::vector<int> divisors;  // ascending; 64-bit trial division, so that no counter wraps near INT_MAX
    std::vector<int> large;
    for (std::int64_t d = 1; d * d <= world; ++d) {
        if (world % d != 0) continue;
        divisors.push_back(static_cast<int>(d));
        if (d * d != world) large.push_back(static_cast<int>(world / d));
    }
    divisors.insert(divisors.end(), large.rbegin(), large.rend());
    std::vector<GridShape> shapes;
    for (int data : divisors) {
        int const tensor = world / data;
        for (int z : divisors) {
            if (z > tensor) break;
            if (tensor % z != 0) continue;
            int const plane = tensor / z;
            for (int y : divisors) {
                if (y > plane) break;
                if (plane % y == 0) shapes.push_back(GridShape{.data = data, .z = z, .y = y, .x = plane / y});
            }
        }
    }
    return shapes;
}

std::array<Axis, 4> parse_axis_order(std::string const& spec) {
    std::vector<std::string> const names = split_on_commas(spec);
    std::string const problem = fmt::format("grid order '{}' must name each of x, y, z and data exactly once, fastest "
                                            "first, as in x,y,z,data",
                                            spec);
    AXONN_REQUIRE(names.size() == 4, "{}", problem);
    std::array<Axis, 4> order{};
    for (std::size_t i = 0; i < names.size(); ++i) {
        std::optional<Axis> const axis = find_axis(names[i]);
        AXONN_REQUIRE(axis.has_value() && std::find(order.begin(), order.begin() + i, *axis) == order.begin() + i, "{}",
                      problem);
        order[i] = *axis;
    }
    return order;
}

ProcessGrid::ProcessGrid(MPI_Comm world, GridShape shape, std::array<Axis, 4> order_fastest_first,
                         CommOptions options)
    : shape_(shape), order_(order_fastest_first), progress_(node_has_a_cpu_per_rank(world)) {
    MPI_Comm_rank(world, &rank_);
    MPI_Comm_size(world, &world_size_);
    for (Axis axis : all_axes) {
        AXONN_REQUIRE(shape_.size(axis) >= 1,
                      "grid axis {} has size {} in {}: every size must be at least 1, fix --grid", axis_name(axis),
                      shape_.size(axis), shape_.to_string());
        AXONN_REQUIRE(
            std::count(order_.begin(), order_.end(), axis) == 1,
            "the grid order must name each of x, y, z and data exactly once, fastest first, as in x,y,z,data");
    }
    AXONN_REQUIRE(shape_.product() == world_size_,
                  "the grid {} has {} ranks but the job has {} processes: fix --grid so that data·z·y·x = {}",
                  shape_.to_string(), shape_.product(), world_size_, world_size_);
    // Every rank creates the communicators in this same order: each creation is a collective over `world`.
    add(Group::data, split(world, group_axes(Group::data)), options);
    MPI_Comm const z = split(world, group_axes(Group::z));
    add(Group::z, z, options);
    add(Group::z_prefetch, duplicate(z), options);
    add(Group::y, split(world, group_axes(Group::y)), options);
    add(Group::x, split(world, group_axes(Group::x)), options);
    add(Group::tensor, split(world, group_axes(Group::tensor)), options);
    // A copy, not `world` itself: the grid frees what it holds, and its traffic must not match the caller's.
    add(Group::world, duplicate(world), options);
}

int ProcessGrid::coord(Axis axis) const { return rank_ / stride(axis) % size(axis); }

Communicator& ProcessGrid::comm(Group group) { return *comms_[static_cast<std::size_t>(group)]; }

int ProcessGrid::stride(Axis axis) const {
    int stride = 1;
    for (std::size_t i = 0; order_[i] != axis; ++i) {
        stride *= size(order_[i]);
    }
    return stride;
}

MPI_Comm ProcessGrid::split(MPI_Comm world, std::vector<Axis> const& axes_slowest_first) const {
    // Removing the group's axes from the rank leaves the mixed-radix number of the other coordinates: a colour
    // that two ranks share exactly when they differ only in the group's axes.
    int colour = rank_;
    int key = 0;
    for (Axis axis : axes_slowest_first) {
        colour -= coord(axis) * stride(axis);
        key = key * size(axis) + coord(axis);
    }
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_split(world, colour, key, &comm);
    return comm;
}

void ProcessGrid::add(Group group, MPI_Comm comm, CommOptions options) {
    comms_[static_cast<std::size_t>(group)] = std::make_unique<Communicator>(comm, group, traffic_, progress_, options);
}

}  // namespace axonn
