// `axonn train --trace`: a 4-rank run (grid z=2, y=2) writes one Chrome trace that parses as JSON and holds
// every rank as a process; its spans nest on each track (steps ⊃ forward/backward ⊃ layers; kernels and waits
// one after the other); its collectives sit on their groups' tracks; and some collective runs while a kernel
// computes on the same rank: communication overlapped with computation, seen. The metrics carry the exposed
// time and the hidden fraction of every step.
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_trace {

struct Span {
    std::string name, category;
    double begin, end;
};

class Trace : public testing::JobTest {};

TEST_F(Trace, ARunsTimelineOfEveryRankNestsAndShowsCollectivesUnderKernels) {
    std::filesystem::path const trace = dir_ / "trace.json", metrics = dir_ / "metrics.jsonl";
    testing::JobResult const result = mpirun("-np 4 " + train("--grid data=1,z=2,y=2,x=1 --steps 3 --trace " +
                                                              trace.string() + " --metrics " + metrics.string()));
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    std::ifstream in(trace);
    nlohmann::json const file = nlohmann::json::parse(in);  // throws, failing the test, unless it is JSON
    ASSERT_TRUE(file.contains("traceEvents"));

    std::map<int, std::string> processes;
    std::map<std::pair<int, int>, std::vector<Span>> tracks;  // (pid, tid) → spans
    for (nlohmann::json const& event : file["traceEvents"]) {
        if (event["ph"] == "M" && event["name"] == "process_name") processes[event["pid"]] = event["args"]["name"];
        if (event["ph"] != "X") continue;
        double const begin = event["ts"];
        tracks[{event["pid"], event["tid"]}].push_back(
            {event["name"], event["cat"], begin, begin + event["dur"].get<double>()});
    }
    EXPECT_EQ(processes.size(), 4u);
    EXPECT_EQ(processes[3], "rank 3: data 0, z 1, y 1, x 0");

    for (int pid = 0; pid < 4; ++pid) {
        SCOPED_TRACE("rank " + std::to_string(pid));
        std::set<std::string> steps, kernels, collectives;
        std::vector<Span> kernel_spans, collective_spans;
        for (auto const& [key, spans] : tracks) {
            if (key.first != pid) continue;
            for (Span const& span : spans) {
                (span.category == "step" ? steps : span.category == "collective" ? collectives : kernels).insert(
                    span.name.substr(0, span.name.find(" (")));
                bool const kernel = span.category != "step" && span.category != "collective" && span.category != "wait";
                if (kernel) kernel_spans.push_back(span);
                if (span.category == "collective") collective_spans.push_back(span);
            }
            // On one track, spans nest or follow one another (1 ns of slack for the microsecond rounding).
            if (spans.front().category == "collective") continue;  // lanes: checked below
            std::vector<Span> sorted = spans;
            std::sort(sorted.begin(), sorted.end(), [](Span const& a, Span const& b) {
                return a.begin < b.begin || (a.begin == b.begin && a.end > b.end);
            });
            std::vector<Span> open;
            for (Span const& span : sorted) {
                while (!open.empty() && open.back().end <= span.begin + 1e-3) open.pop_back();
                if (!open.empty()) {
                    EXPECT_LE(span.end, open.back().end + 1e-3) << span.name << " overlaps " << open.back().name;
                }
                open.push_back(span);
            }
        }
        for (char const* name : {"step 0", "step 2", "forward", "backward", "layer 0", "layer 1"}) {
            EXPECT_TRUE(steps.count(name)) << name;
        }
        for (char const* name : {"linear_forward", "linear_backward_input", "linear_backward_weight",
                                 "attention_forward", "wait all_gather z_prefetch"}) {
            EXPECT_TRUE(kernels.count(name)) << name;
        }
        for (char const* name : {"all_gather z_prefetch", "reduce_scatter z", "all_reduce y", "all_reduce z"}) {
            EXPECT_TRUE(collectives.count(name)) << name;
        }
        bool overlapped = false;
        for (Span const& collective : collective_spans) {
            for (Span const& kernel : kernel_spans) {
                overlapped |= collective.begin < kernel.begin && kernel.end < collective.end;
            }
        }
        EXPECT_TRUE(overlapped) << "no kernel ran while a collective was in flight";
    }

    std::ifstream lines(metrics);
    int records = 0;
    for (std::string line; std::getline(lines, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        if (!record.contains("loss")) continue;
        ++records;
        EXPECT_GE(record["comm_exposed_s"].get<double>(), 0.0);
        EXPECT_GE(record["comm_hidden_fraction"].get<double>(), 0.0);
        EXPECT_LE(record["comm_hidden_fraction"].get<double>(), 1.0);
    }
    EXPECT_EQ(records, 3);
}

// rank 0's step spans in a trace file: the time each begins, by name ("step 3").
std::map<std::string, double> step_begins(std::filesystem::path const& trace) {
    std::ifstream in(trace);
    nlohmann::json const file = nlohmann::json::parse(in);
    std::map<std::string, double> begins;
    for (nlohmann::json const& event : file["traceEvents"]) {
        bool const step = event["ph"] == "X" && event["name"].get<std::string>().starts_with("step ");
        if (step && event["pid"] == 0) begins[event["name"]] = event["ts"];
    }
    return begins;
}

// The steps of a metrics file's training records, in the file's order.
std::vector<int> metrics_steps(std::filesystem::path const& metrics) {
    std::ifstream lines(metrics);
    std::vector<int> steps;
    for (std::string line; std::getline(lines, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        if (record.contains("loss")) steps.push_back(record["step"]);
    }
    return steps;
}

// A requeued job passes the same --trace and --metrics at every launch: each launch after the first continues the
// run's trace (its own first steps, from the step it resumes at, after the earlier launches' on the timeline) and
// its metrics, --overwrite or not; a trace of another run is still refused without --overwrite. A launch that
// rolls the run back to an earlier checkpoint drops the later steps from both, as it sets their checkpoints aside,
// after copying both files aside as they were; one that has neither leaves that to the next launch that does.
TEST_F(Trace, AResumedRunContinuesItsOwnTraceAndMetrics) {
    std::filesystem::path const trace = dir_ / "requeued.json", metrics = dir_ / "requeued.jsonl";
    std::string const outputs = " --ckpt-dir " + (dir_ / "requeued").string() + " --resume latest --trace " +
                                trace.string() + " --trace-steps 2 --metrics " + metrics.string();
    for (char const* launch : {"--steps 3", "--steps 6", "--steps 8 --overwrite"}) {
        testing::JobResult const result = mpirun("-np 2 " + train(std::string("--grid data=2 ") + launch + outputs));
        ASSERT_EQ(result.exit_status, 0) << launch << ": " << result.stderr_text;
    }
    std::map<std::string, double> begins = step_begins(trace);
    EXPECT_EQ(begins.size(), 6u) << ::testing::PrintToString(begins);
    for (char const* step : {"step 0", "step 1", "step 3", "step 4", "step 6", "step 7"}) {
        EXPECT_TRUE(begins.count(step)) << step;
    }
    EXPECT_LT(begins["step 1"], begins["step 3"]);
    EXPECT_LT(begins["step 4"], begins["step 6"]);
    EXPECT_EQ(metrics_steps(metrics), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));

    double const first_step_3 = begins["step 3"];
    std::string const rollback = " --ckpt-dir " + (dir_ / "requeued").string() + " --resume " +
                                 (dir_ / "requeued" / "step_00000003").string() + " --trace " + trace.string() +
                                 " --trace-steps 2 --metrics " + metrics.string();
    testing::JobResult const rolled_back = mpirun("-np 2 " + train("--grid data=2 --steps 5" + rollback));
    ASSERT_EQ(rolled_back.exit_status, 0) << rolled_back.stderr_text;
    begins = step_begins(trace);
    EXPECT_EQ(begins.size(), 4u) << ::testing::PrintToString(begins);
    for (char const* step : {"step 0", "step 1", "step 3", "step 4"}) EXPECT_TRUE(begins.count(step)) << step;
    EXPECT_GT(begins["step 3"], first_step_3) << "the launch's own step 3, not the first launch's";
    EXPECT_EQ(metrics_steps(metrics), (std::vector<int>{0, 1, 2, 3, 4}));
    // What the rollback cut from both files is kept in copies of them as they were (FILE.rolled-back-TIME).
    std::vector<std::filesystem::path> copies;  // requeued.json's, then requeued.jsonl's
    for (auto const& entry : std::filesystem::directory_iterator(dir_)) {
        std::string const name = entry.path().filename().string();
        if (name.starts_with("requeued.") && name.find(".rolled-back-") != std::string::npos) {
            copies.push_back(entry.path());
        }
    }
    std::sort(copies.begin(), copies.end());
    ASSERT_EQ(copies.size(), 2u) << ::testing::PrintToString(copies);
    EXPECT_EQ(step_begins(copies[0]).size(), 6u) << copies[0];
    EXPECT_EQ(metrics_steps(copies[1]), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7})) << copies[1];

    // Rolled back again to step 3 by a launch without --trace and --metrics, which cannot cut them: the next launch
    // that has them drops the abandoned steps 3 and 4 (another launch's, by the checkpoint's lineage).
    std::string const quiet_rollback =
        " --ckpt-dir " + (dir_ / "requeued").string() + " --resume " + (dir_ / "requeued" / "step_00000003").string();
    testing::JobResult const quiet = mpirun("-np 2 " + train("--grid data=2 --steps 5" + quiet_rollback));
    ASSERT_EQ(quiet.exit_status, 0) << quiet.stderr_text;
    testing::JobResult const continued = mpirun("-np 2 " + train("--grid data=2 --steps 6" + outputs));
    ASSERT_EQ(continued.exit_status, 0) << continued.stderr_text;
    begins = step_begins(trace);
    EXPECT_EQ(begins.size(), 4u) << ::testing::PrintToString(begins);
    for (char const* step : {"step 0", "step 1", "step 5", "step 6"}) {  // step 6: the closing validation's span
        EXPECT_TRUE(begins.count(step)) << step;
    }
    EXPECT_EQ(metrics_steps(metrics), (std::vector<int>{0, 1, 2, 5}));

    testing::JobResult const another = mpirun("-np 1 " + train("--steps 1 --seed 5 --trace " + trace.string()));
    EXPECT_EQ(another.exit_status, 1) << another.stderr_text;
    EXPECT_NE(another.stderr_text.find("already exists"), std::string::npos) << another.stderr_text;

    // An event edited by hand into a type this code does not write ended a resumed run with an internal error once
    // its steps were done: refused before any step instead, and no checkpoint is saved.
    std::size_t const events = nlohmann::json::parse(std::ifstream(trace))["traceEvents"].size();
    std::string text = testing::file_bytes(trace);
    nlohmann::json const mistyped_event = {{"name", "x"}, {"ph", "X"}, {"pid", 0}, {"tid", 1}, {"ts", 5}, {"dur", "a"}};
    text.insert(text.rfind("]}"), "," + mistyped_event.dump());  // the file's start, which names the run, as written
    std::ofstream(trace) << text;
    testing::JobResult const mistyped = mpirun("-np 2 " + train("--grid data=2 --steps 10" + outputs));
    EXPECT_EQ(mistyped.exit_status, 1) << mistyped.stderr_text;
    EXPECT_NE(mistyped.stderr_text.find("cannot be continued (its event " + std::to_string(events) +
                                        " has a \"dur\" that is not a number)"),
              std::string::npos)
        << mistyped.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "requeued" / "step_00000010"));

    // The run's own trace cut short cannot be continued: refused before any step, and no checkpoint is saved.
    std::filesystem::resize_file(trace, std::filesystem::file_size(trace) / 2);
    testing::JobResult const cut = mpirun("-np 2 " + train("--grid data=2 --steps 10" + outputs));
    EXPECT_EQ(cut.exit_status, 1) << cut.stderr_text;
    EXPECT_NE(cut.stderr_text.find("cannot be continued (not valid JSON near byte"), std::string::npos)
        << cut.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "requeued" / "step_00000010"));
}

}  // namespace test_trace
}  // namespace axonn
