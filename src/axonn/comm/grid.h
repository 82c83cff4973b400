// The 4D process grid (data × z × y × x, AxoNN's algorithm §1.1): which coordinates a rank has, and the
// communicators of the groups that the parallel layers talk over. Every rank creates every communicator once.
#pragma once

#include "axonn/comm/communicator.h"

#include <mpi.h>

#include <array>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

namespace axonn {

enum class Axis { data, z, y, x };
std::string axis_name(Axis axis);  // "data", "z", "y", "x"

enum class Group;

struct GridShape {
    int data = 1, z = 1, y = 1, x = 1;

    int size(Axis axis) const;
    // A group's members: the product of its axes' sizes (group_axes).
    int size(Group group) const;
    // The replicas of the global batch: each (data, z) position holds B / batch_replicas() of its B sequences, and
    // the X and Y ranks of a position hold the same ones.
    int batch_replicas() const { return data * z; }
    int product() const;
    std::string to_string() const;  // "data=2,z=1,y=2,x=2"
    // "data=2,z=1,y=2,x=2": any subset of the axes, in any order; an axis not named has size 1.
    static GridShape parse(std::string const& spec);
    bool operator==(GridShape const&) const = default;
};

// Writes to_string(): how logs and test names show a grid.
std::ostream& operator<<(std::ostream& out, GridShape const& shape);

// Every ordered factorisation of `world` into (data, z, y, x): data slowest, x fastest, each ascending.
std::vector<GridShape> grid_factorisations(int world);

// The members of each group are the ranks that differ only in the named axes:
//   data, z, y, x  one axis, ordered by its coordinate
//   z_prefetch     the members of z on a second communicator, so weight prefetches do not queue behind z's
//                  reduce-scatters
//   tensor         x, y and z: the tensor-parallel block of one data replica, ordered (z, y, x), x fastest
//   world          every rank, in the order of the world communicator
enum class Group { data, z, y, x, z_prefetch, tensor, world };
inline constexpr int group_count = 7;
std::string group_name(Group group);
// The axes whose coordinates vary among a group's members, slowest first: the one table of what each group is,
// which the grid's communicators and the models of traffic and time all read.
std::vector<Axis> group_axes(Group group);

class ProcessGrid {
public:
    // order_fastest_first: which axis varies fastest in rank numbering, then the next; with sizes s and
    // coordinates c, rank = c(a0) + s(a0)·(c(a1) + s(a1)·(c(a2) + s(a2)·c(a3))). The default is AxoNN's.
    ProcessGrid(MPI_Comm world, GridShape shape,
                std::array<Axis, 4> order_fastest_first = {Axis::x, Axis::y, Axis::z, Axis::data},
                CommOptions options = {});
    // Communicators hold a reference to the grid's traffic log, so the grid stays where it was built.
    ProcessGrid(ProcessGrid const&) = delete;
    ProcessGrid& operator=(ProcessGrid const&) = delete;

    GridShape const& shape() const { return shape_; }
    int rank() const { return rank_; }
    int world_size() const { return world_size_; }
    int coord(Axis axis) const;
    int size(Axis axis) const { return shape_.size(axis); }
    int size(Group group) const { return shape_.size(group); }
    // Which share of the global batch this rank holds: its (data, z) position, data slower, from 0 to
    // data · z − 1. The share's rows start at batch_replica() · (B / (data · z)).
    int batch_replica() const { return coord(Axis::data) * size(Axis::z) + coord(Axis::z); }

    Communicator& comm(Group group);
    TrafficLog& traffic() { return traffic_; }  // shared by all of this grid's communicators
    ProgressEngine& progress() { return progress_; }

private:
    int stride(Axis axis) const;
    // The ranks that share every coordinate outside `axes`, ordered by their coordinates on `axes`, last fastest.
    MPI_Comm split(MPI_Comm world, std::vector<Axis> const& axes_slowest_first) const;
    void add(Group group, MPI_Comm comm, CommOptions options);

    GridShape shape_;
    std::array<Axis, 4> order_;
    int rank_ = 0;
    int world_size_ = 1;
    TrafficLog traffic_;       // declared before the communicators, which record into it until they are freed
    ProgressEngine progress_;  // likewise: it progresses their non-blocking collectives
    std::array<std::unique_ptr<Communicator>, group_count> comms_;
};

// Parses a --grid-order value, fastest axis first, such as "x,y,z,data": it must name all four axes once.
std::array<Axis, 4> parse_axis_order(std::string const& spec);

}  // namespace axonn
