// The process grid and its communicators, under mpirun at np 1, 2, 4 and 8: for every factorisation of the world
// size, in AxoNN's rank order and in a permuted one, the rank map, each group's members, the collectives' values,
// the traffic log and the debug-mode divergence check are compared with formulas written here from the spec.
// Assertions are EXPECT_, never ASSERT_: a rank that left a test early would leave the others waiting in a
// collective.
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/timer.h"
#include "support/micro_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_grid {

using Order = std::array<Axis, 4>;
using Coordinates = std::array<int, 4>;  // indexed by Axis

constexpr Order default_order = {Axis::x, Axis::y, Axis::z, Axis::data};
constexpr Order permuted_order = {Axis::y, Axis::data, Axis::x, Axis::z};
constexpr std::array<Axis, 4> all_axes = {Axis::data, Axis::z, Axis::y, Axis::x};
constexpr std::array<Group, group_count> all_groups = {Group::data,       Group::z,      Group::y,    Group::x,
                                                       Group::z_prefetch, Group::tensor, Group::world};

std::size_t index(Axis axis) { return static_cast<std::size_t>(axis); }

int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

using testing::world_size;

// The rank map of the spec, read backwards: rank = c(a0) + s(a0)·(c(a1) + s(a1)·(c(a2) + s(a2)·c(a3))).
Coordinates coordinates_of(int rank, GridShape const& shape, Order const& order) {
    Coordinates coordinates{};
    for (Axis axis : order) {
        coordinates[index(axis)] = rank % shape.size(axis);
        rank /= shape.size(axis);
    }
    return coordinates;
}

int rank_of(Coordinates const& c, GridShape const& s, Order const& o) {
    auto const at = [&](int i) { return c[index(o[i])]; };
    auto const size = [&](int i) { return s.size(o[i]); };
    return at(0) + size(0) * (at(1) + size(1) * (at(2) + size(2) * at(3)));
}

// The world ranks of `rank`'s group, in the group's rank order.
std::vector<int> expected_members(Group group, int rank, GridShape const& shape, Order const& order) {
    std::vector<int> members(shape.product());
    std::iota(members.begin(), members.end(), 0);
    if (group == Group::world) {
        return members;
    }
    std::vector<Axis> const varying = group_axes(group);
    auto const fixed_coordinates_match = [&](int other) {
        Coordinates const mine = coordinates_of(rank, shape, order);
        Coordinates const theirs = coordinates_of(other, shape, order);
        return std::all_of(all_axes.begin(), all_axes.end(), [&](Axis axis) {
            return std::find(varying.begin(), varying.end(), axis) != varying.end() ||
                   mine[index(axis)] == theirs[index(axis)];
        });
    };
    auto const key = [&](int member) {
        std::vector<int> varying_coordinates;
        for (Axis axis : varying) {
            varying_coordinates.push_back(coordinates_of(member, shape, order)[index(axis)]);
        }
        return varying_coordinates;
    };
    std::erase_if(members, [&](int other) { return !fixed_coordinates_match(other); });
    std::sort(members.begin(), members.end(), [&](int a, int b) { return key(a) < key(b); });
    return members;
}

// What each rank contributes: small integers and quarters, so that every sum below is exact in float.
float contribution(int rank, int i) { return static_cast<float>(rank + 1) + 0.25f * static_cast<float>(i); }
float max_contribution(int rank, int i) { return static_cast<float>((rank * 7 + i * 3) % 11); }
float scatter_contribution(int rank, int slice, int i) { return static_cast<float>(rank * 100 + slice * 10 + i); }

constexpr int count = 5;          // elements of each all_reduce
constexpr int count_per_rank = 3;  // elements of each rank's slice in all_gather and reduce_scatter

struct CollectiveResults {
    std::vector<float> sum, max, gathered, scattered;
    std::vector<double> sum_double;
};

enum class Issue { blocking, non_blocking };

// One call of each collective on `comm`, every rank contributing values made from its world rank. Non-blocking:
// all started before any is waited on, and waited on in the reverse order (the maximum stays blocking: there is
// no non-blocking form).
CollectiveResults run_each_collective(Communicator& comm, int rank, Issue issue = Issue::blocking) {
    CollectiveResults r;
    for (int i = 0; i < count; ++i) {
        r.sum.push_back(contribution(rank, i));
        r.sum_double.push_back(contribution(rank, i));
        r.max.push_back(max_contribution(rank, i));
    }
    std::vector<float> send(count_per_rank);
    for (int i = 0; i < count_per_rank; ++i) {
        send[i] = contribution(rank, i);
    }
    std::vector<float> scatter_send;
    for (int slice = 0; slice < comm.size(); ++slice) {
        for (int i = 0; i < count_per_rank; ++i) {
            scatter_send.push_back(scatter_contribution(rank, slice, i));
        }
    }
    r.gathered.resize(count_per_rank * comm.size());
    r.scattered.resize(count_per_rank);
    if (issue == Issue::blocking) {
        comm.all_reduce(r.sum.data(), count);
        comm.all_reduce(r.sum_double.data(), count);
        comm.all_reduce_max(r.max.data(), count);
        comm.all_gather(send.data(), r.gathered.data(), count_per_rank);
        comm.reduce_scatter(scatter_send.data(), r.scattered.data(), count_per_rank);
        return r;
    }
    std::vector<Collective> in_flight;
    in_flight.push_back(comm.start_all_reduce(r.sum.data(), count));
    in_flight.push_back(comm.start_all_reduce(r.sum_double.data(), count));
    comm.all_reduce_max(r.max.data(), count);
    in_flight.push_back(comm.start_all_gather(send.data(), r.gathered.data(), count_per_rank));
    in_flight.push_back(comm.start_reduce_scatter(scatter_send.data(), r.scattered.data(), count_per_rank));
    for (auto collective = in_flight.rbegin(); collective != in_flight.rend(); ++collective) collective->wait();
    return r;
}

struct GridCase {
    GridShape shape;
    Order order;
};

std::vector<GridCase> every_grid_of_this_world() {
    std::vector<GridCase> cases;
    for (GridShape const& shape : grid_factorisations(world_size())) {
        cases.push_back({shape, default_order});
        cases.push_back({shape, permuted_order});
    }
    return cases;
}

std::string case_name(::testing::TestParamInfo<GridCase> const& info) {
    return testing::grid_test_name(info.param.shape) +
           (info.param.order == default_order ? "_default_order" : "_permuted_order");
}

class GridTest : public ::testing::TestWithParam<GridCase> {
protected:
    GridShape const& shape() const { return GetParam().shape; }
    Order const& order() const { return GetParam().order; }
    std::vector<int> members(Group group) const { return expected_members(group, world_rank(), shape(), order()); }
};

TEST_P(GridTest, CoordinatesFollowTheRankMapAndAreABijection) {
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order());
    EXPECT_EQ(grid.rank(), world_rank());
    EXPECT_EQ(grid.world_size(), world_size());
    EXPECT_EQ(grid.shape(), shape());
    Coordinates mine{};
    for (Axis axis : all_axes) {
        mine[index(axis)] = grid.coord(axis);
        EXPECT_EQ(grid.size(axis), shape().size(axis));
        EXPECT_GE(mine[index(axis)], 0);
        EXPECT_LT(mine[index(axis)], shape().size(axis)) << axis_name(axis);
    }
    EXPECT_EQ(rank_of(mine, shape(), order()), world_rank());
    if (order() == default_order) {  // AxoNN's own statement of the map (algorithm §1.1)
        int const tensor = shape().x * shape().y * shape().z;
        int const intra = world_rank() % tensor;
        EXPECT_EQ(mine[index(Axis::x)], intra % shape().x);
        EXPECT_EQ(mine[index(Axis::y)], intra / shape().x % shape().y);
        EXPECT_EQ(mine[index(Axis::z)], intra / (shape().x * shape().y));
        EXPECT_EQ(mine[index(Axis::data)], world_rank() / tensor);
    }
    std::vector<Coordinates> everyone(world_size());
    MPI_Allgather(mine.data(), 4, MPI_INT, everyone.data(), 4, MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(std::set<Coordinates>(everyone.begin(), everyone.end()).size(), everyone.size());
}

TEST_P(GridTest, EachGroupHoldsTheRanksThatDifferOnlyInItsAxes) {
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order());
    for (Group group : all_groups) {
        Communicator& comm = grid.comm(group);
        std::vector<int> const expected = members(group);
        EXPECT_EQ(comm.group(), group);
        EXPECT_EQ(comm.size(), static_cast<int>(expected.size())) << group_name(group);
        auto const me = std::find(expected.begin(), expected.end(), world_rank());
        EXPECT_EQ(comm.rank(), me - expected.begin()) << group_name(group);
        float const my_rank = static_cast<float>(world_rank());
        std::vector<float> gathered(comm.size());
        comm.all_gather(&my_rank, gathered.data(), 1);
        EXPECT_EQ(std::vector<int>(gathered.begin(), gathered.end()), expected) << group_name(group);
    }
}

// Every collective of every group of `grid`, blocking and not, against its definition.
void expect_collectives_follow_definitions(ProcessGrid& grid, GridShape const& shape, Order const& order) {
    for (int pass = 0; pass < 2 * static_cast<int>(all_groups.size()); ++pass) {
        Group const group = all_groups[pass / 2];
        Issue const issue = pass % 2 == 0 ? Issue::blocking : Issue::non_blocking;
        SCOPED_TRACE(group_name(group) + (issue == Issue::blocking ? " blocking" : " non-blocking"));
        std::vector<int> const m = expected_members(group, world_rank(), shape, order);
        int const my_index = grid.comm(group).rank();
        CollectiveResults const r = run_each_collective(grid.comm(group), world_rank(), issue);
        for (int i = 0; i < count; ++i) {
            float sum = 0;
            float max = 0;
            for (int member : m) {
                sum += contribution(member, i);
                max = std::max(max, max_contribution(member, i));
            }
            EXPECT_EQ(r.sum[i], sum);
            EXPECT_EQ(r.sum_double[i], sum);
            EXPECT_EQ(r.max[i], max);
        }
        for (std::size_t j = 0; j < m.size(); ++j) {
            for (int i = 0; i < count_per_rank; ++i) {
                EXPECT_EQ(r.gathered[j * count_per_rank + i], contribution(m[j], i));
            }
        }
        for (int i = 0; i < count_per_rank; ++i) {
            float sum = 0;
            for (int member : m) {
                sum += scatter_contribution(member, my_index, i);
            }
            EXPECT_EQ(r.scattered[i], sum);
        }
    }
}

TEST_P(GridTest, CollectivesGiveTheValuesOfTheirDefinitions) {
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order());
    expect_collectives_follow_definitions(grid, shape(), order());
}

// Collectives above MPI's int count go as several calls of at most CommOptions::max_count elements: with a limit
// of 2, every all-reduce (5 elements) and every rank's slice of a gather or scatter (3) is split, unevenly, and
// the values are still the definitions', bf16 ones too; each split collective is recorded as one call.
TEST_P(GridTest, SplitCollectivesGiveTheValuesOfTheirDefinitions) {
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order(), CommOptions{.max_count = 2});
    expect_collectives_follow_definitions(grid, shape(), order());

    Communicator& comm = grid.comm(Group::world);
    int const n = comm.size();
    std::vector<bfloat16> mine(count_per_rank), gathered(count_per_rank * n), slices(count_per_rank * n), summed(3);
    for (int i = 0; i < count_per_rank; ++i) mine[i] = to_bfloat16(static_cast<float>(world_rank() + i));
    for (int slice = 0; slice < n; ++slice) {
        for (int i = 0; i < count_per_rank; ++i) {
            slices[slice * count_per_rank + i] = to_bfloat16(static_cast<float>(slice + i));
        }
    }
    grid.traffic().clear();
    comm.start_all_gather(mine.data(), gathered.data(), count_per_rank).wait();
    comm.start_reduce_scatter(slices.data(), summed.data(), count_per_rank).wait();
    for (int r = 0; r < n; ++r) {
        for (int i = 0; i < count_per_rank; ++i) {
            EXPECT_EQ(to_float(gathered[r * count_per_rank + i]), static_cast<float>(r + i));  // world order
        }
    }
    for (int i = 0; i < count_per_rank; ++i) {
        EXPECT_EQ(to_float(summed[i]), static_cast<float>(n * (comm.rank() + i)));  // small integers: exact in bf16
    }
    if (n > 1) {
        for (TrafficEntry const& entry : grid.traffic().entries()) {
            EXPECT_EQ(entry.calls, 1u) << entry.op;
            EXPECT_EQ(entry.bytes, static_cast<std::uint64_t>(count_per_rank * n * sizeof(bfloat16))) << entry.op;
        }
    }
}

TEST_P(GridTest, TrafficLogCountsThePayloadOfEachCallOnItsGroup) {
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order());
    for (Group group : all_groups) {
        SCOPED_TRACE(group_name(group));
        grid.traffic().clear();
        int const n = grid.comm(group).size();
        run_each_collective(grid.comm(group), world_rank());
        std::vector<TrafficEntry> const entries = grid.traffic().entries();
        for (Group other : all_groups) {
            if (other != group) {
                EXPECT_EQ(grid.traffic().bytes(other), 0u) << group_name(other);
            }
        }
        if (n == 1) {
            EXPECT_TRUE(entries.empty());
            continue;
        }
        std::uint64_t const gather_bytes = count_per_rank * n * sizeof(float);
        EXPECT_EQ(grid.traffic().bytes(group), count * (4 + 8 + 4) + 2 * gather_bytes);
        EXPECT_EQ(entries.size(), 4u);
        struct Expected {
            char const* op;
            std::uint64_t calls, bytes;
        };
        std::vector<Expected> const expected = {{"all_reduce", 2, count * (4 + 8)},
                                                {"all_reduce_max", 1, count * 4},
                                                {"all_gather", 1, gather_bytes},
                                                {"reduce_scatter", 1, gather_bytes}};
        for (std::size_t e = 0; e < std::min(entries.size(), expected.size()); ++e) {
            EXPECT_EQ(entries[e].op, expected[e].op);
            EXPECT_EQ(entries[e].group, group);
            EXPECT_EQ(entries[e].calls, expected[e].calls) << expected[e].op;
            EXPECT_EQ(entries[e].bytes, expected[e].bytes) << expected[e].op;
            EXPECT_GE(entries[e].seconds, 0.0);
        }
    }
}

TEST_P(GridTest, EachCallIsRecordedWithItsIssueCompletionAndWait) {
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order());
    for (Group group : all_groups) {
        SCOPED_TRACE(group_name(group));
        grid.traffic().clear();
        double const before = trace_seconds();
        run_each_collective(grid.comm(group), world_rank(), Issue::non_blocking);
        double const after = trace_seconds();
        std::vector<CollectiveRecord> const calls = grid.traffic().take_calls();
        EXPECT_EQ(calls.size(), grid.comm(group).size() == 1 ? 0u : 5u);
        double waited = 0;
        for (CollectiveRecord const& call : calls) {
            EXPECT_EQ(call.group, group);
            EXPECT_LE(before, call.issued_s) << call.op;
            EXPECT_LE(call.issued_s, call.completed_s) << call.op;
            EXPECT_LE(call.issued_s, call.wait_begin_s) << call.op;
            EXPECT_LE(call.wait_begin_s + call.waited_s, after) << call.op;
            EXPECT_GE(call.waited_s, 0.0) << call.op;
            waited += call.waited_s;
        }
        double total_waited = 0;
        for (TrafficEntry const& entry : grid.traffic().entries()) total_waited += entry.waited_seconds;
        EXPECT_DOUBLE_EQ(total_waited, waited);
        EXPECT_TRUE(grid.traffic().take_calls().empty());  // taken
    }
}

TEST_P(GridTest, DebugModeMakesEveryRankOfADivergingGroupThrow) {
    // A short timeout: if the check itself hung, the job would abort with a report instead of stalling ctest.
    ProcessGrid grid(MPI_COMM_WORLD, shape(), order(), CommOptions{.debug_collectives = true, .debug_timeout_s = 30});
    for (Group group : all_groups) {
        Communicator& comm = grid.comm(group);
        if (comm.size() < 2) {
            continue;
        }
        SCOPED_TRACE(group_name(group));
        float agreed = 1;
        comm.all_reduce(&agreed, 1);
        EXPECT_EQ(agreed, static_cast<float>(comm.size()));
        std::vector<float> const send(64);
        std::vector<float> recv(64 * comm.size());
        std::string message;
        try {
            if (comm.rank() == 1) {
                comm.all_gather(send.data(), recv.data(), 64);
            } else {
                comm.all_reduce(recv.data(), 128);
            }
        } catch (Error const& e) {
            message = e.what();
        }
        std::string const expected = fmt::format(
            "collective #2 on group {} diverged: rank 1 (world rank {}) issued all_gather of 64 floats per rank, "
            "rank 0 (world rank {}) issued all_reduce of 128 floats: every rank of a group must issue the same "
            "collectives in the same order",
            group_name(group), members(group)[1], members(group)[0]);
        EXPECT_EQ(message, expected);
        // The check threw before any data moved, so the group is still in step and usable.
        comm.all_reduce(&agreed, 1);
        EXPECT_EQ(agreed, static_cast<float>(comm.size() * comm.size()));
    }
}

INSTANTIATE_TEST_SUITE_P(EveryFactorisation, GridTest, ::testing::ValuesIn(every_grid_of_this_world()), case_name);

// Run only by the ctest mpi_debug_timeout (np 2), which expects the job to abort with the hang report: rank 0
// enters a collective that rank 1 never issues.
TEST(DebugCollectives, DISABLED_AMissingCollectiveAbortsWithAReport) {
    ProcessGrid grid(MPI_COMM_WORLD, GridShape{.data = world_size()}, default_order,
                     CommOptions{.debug_collectives = true, .debug_timeout_s = 1});
    if (grid.rank() == 0) {
        float value = 1;
        grid.comm(Group::world).all_reduce(&value, 1);
    }
}

// Run only by the ctest mpi_debug_unwaited (np 2), which expects the report: a non-blocking collective whose
// handle is dropped without a wait.
TEST(DebugCollectives, DISABLED_ANonBlockingCollectiveNeverWaitedOnAbortsWithAReport) {
    ProcessGrid grid(MPI_COMM_WORLD, GridShape{.data = world_size()}, default_order,
                     CommOptions{.debug_collectives = true, .debug_timeout_s = 10});
    float value = 1;
    Collective forgotten = grid.comm(Group::world).start_all_reduce(&value, 1);
}

std::string error_of(auto&& action) {
    try {
        action();
    } catch (Error const& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(ProcessGridErrors, AShapeThatDoesNotMatchTheWorldNamesBothAndTheFlag) {
    GridShape const wrong{.data = world_size() + 1};
    std::string const message = error_of([&] { ProcessGrid grid(MPI_COMM_WORLD, wrong); });
    EXPECT_NE(message.find(wrong.to_string()), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(world_size()) + " processes"), std::string::npos) << message;
    EXPECT_NE(message.find("--grid"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(ProcessGridErrors, ASizeBelowOneOrAnOrderThatRepeatsAnAxisThrows) {
    EXPECT_THROW(ProcessGrid(MPI_COMM_WORLD, GridShape{.data = -world_size(), .x = -1}), Error);
    EXPECT_THROW(ProcessGrid(MPI_COMM_WORLD, GridShape{.data = world_size()}, {Axis::x, Axis::x, Axis::z, Axis::data}),
                 Error);
}

// The helper thread that progresses overlapped collectives runs only where the node has a CPU for each of its
// ranks (comm/progress.h): the suite's ranks share this machine, so at np 8 on 2 CPUs there is none, and at np 1 there
// is one wherever MPI provides MPI_THREAD_MULTIPLE.
TEST(ProgressHelper, RunsOnlyWhereTheNodeHasACpuForEachOfItsRanks) {
    ProcessGrid grid(MPI_COMM_WORLD, GridShape{.data = world_size()});
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    bool const cpu_per_rank = static_cast<unsigned>(world_size()) <= std::thread::hardware_concurrency();
    EXPECT_EQ(grid.progress().threaded(), cpu_per_rank && provided == MPI_THREAD_MULTIPLE)
        << world_size() << " ranks, " << std::thread::hardware_concurrency() << " CPUs";
}

TEST(GridShapeParse, AcceptsAnySubsetOfTheAxesInAnyOrder) {
    EXPECT_EQ(GridShape::parse("data=2,z=1,y=2,x=2"), (GridShape{.data = 2, .z = 1, .y = 2, .x = 2}));
    EXPECT_EQ(GridShape::parse("x=4"), (GridShape{.x = 4}));
    EXPECT_EQ(GridShape::parse("y=2,data=3"), (GridShape{.data = 3, .y = 2}));
    EXPECT_EQ(GridShape::parse("data=2,z=3,y=4,x=5").to_string(), "data=2,z=3,y=4,x=5");
    EXPECT_EQ(GridShape::parse("data=2,z=3,y=4,x=5").product(), 120);
}

TEST(GridShapeParse, ABadSpecNamesTheBadPartAndTheExpectedForm) {
    struct Row {
        char const* spec;
        char const* names;
    };
    for (Row const& row : std::vector<Row>{{"data=2,w=2", "unknown grid axis 'w'"},
                                           {"x=2,x=4", "grid axis 'x' is given twice"},
                                           {"x=0", "grid size '0' of axis x"},
                                           {"y=-2", "grid size '-2' of axis y"},
                                           {"z=two", "grid size 'two' of axis z"},
                                           {"x=2.5", "grid size '2.5' of axis x"},
                                           {"x=", "grid size '' of axis x"},
                                           {"x=99999999999", "grid size 99999999999 of axis x in 'x=99999999999' is "
                                                             "too large"},
                                           {"data", "grid part 'data'"},
                                           {"data=2,,x=2", "grid part ''"},
                                           {"", "grid part ''"}}) {
        std::string const message = error_of([&] { GridShape::parse(row.spec); });
        EXPECT_NE(message.find(row.names), std::string::npos) << row.spec << " → " << message;
        EXPECT_NE(message.find("data=2,z=1,y=2,x=2"), std::string::npos) << row.spec << " → " << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

TEST(GridFactorisations, ListsEveryOrderedFactorisationOnceInAStableOrder) {
    EXPECT_EQ(grid_factorisations(1), std::vector<GridShape>{GridShape{}});
    for (int world : {2, 4, 8, 12}) {
        std::vector<GridShape> const shapes = grid_factorisations(world);
        std::size_t const expected_count = world == 2 ? 4 : world == 4 ? 10 : world == 8 ? 20 : 40;
        EXPECT_EQ(shapes.size(), expected_count) << world;
        for (GridShape const& s : shapes) {
            EXPECT_EQ(s.product(), world) << s.to_string();
        }
        auto const as_tuple = [](GridShape const& s) { return std::tuple(s.data, s.z, s.y, s.x); };
        EXPECT_TRUE(std::is_sorted(shapes.begin(), shapes.end(),
                                   [&](auto const& a, auto const& b) { return as_tuple(a) < as_tuple(b); }));
        EXPECT_EQ(shapes.front(), (GridShape{.x = world}));
        EXPECT_EQ(shapes.back(), (GridShape{.data = world}));
    }
    EXPECT_THROW(grid_factorisations(0), Error);
}

TEST(AxisOrder, ParsesFourDistinctAxesFastestFirst) {
    EXPECT_EQ(parse_axis_order("x,y,z,data"), default_order);
    EXPECT_EQ(parse_axis_order("y,data,x,z"), permuted_order);
    for (char const* bad : {"x,y,z", "x,y,z,w", "x,x,z,data", "x,y,z,data,x", ""}) {
        std::string const message = error_of([&] { parse_axis_order(bad); });
        EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
        EXPECT_NE(message.find("x,y,z,data"), std::string::npos) << message;
    }
}

TEST(Names, AxesAndGroupsHaveTheirFlagNames) {
    EXPECT_EQ(axis_name(Axis::data), "data");
    EXPECT_EQ(axis_name(Axis::x), "x");
    EXPECT_EQ(group_name(Group::z_prefetch), "z_prefetch");
    EXPECT_EQ(group_name(Group::tensor), "tensor");
    EXPECT_EQ(group_name(Group::world), "world");
}

}  // namespace test_grid
}  // namespace axonn
