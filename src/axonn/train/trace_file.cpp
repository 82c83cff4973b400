#include "axonn/train/trace_file.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/guarded_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace axonn {
namespace {

constexpr int steps_tid = 1, kernels_tid = 2, first_comm_tid = 10;
// The largest trace a resumed run reads back to continue (a gathered trace of 50,000 events on each of 32 ranks).
constexpr std::uint64_t max_continued_bytes = std::uint64_t{512} << 20;
// The gap on the timeline between a continued trace's last event and the resumed run's first.
constexpr double continuation_gap_us = 1e6;

nlohmann::json span(std::string const& name, char const* category, int pid, int tid, double begin_s, double end_s) {
    return {{"name", name}, {"cat", category}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
            {"ts", begin_s * 1e6}, {"dur", std::max(0.0, end_s - begin_s) * 1e6}};
}

// The start of a trace file, up to its events: "run" names the training run (absent for bench's traces).
std::string trace_header(std::string const& run_id) {
    std::string const run = run_id.empty() ? "" : fmt::format(", \"run\": \"{}\"", run_id);
    return fmt::format("{{\"displayTimeUnit\": \"ms\", \"otherData\": {{\"producer\": \"axonn train --trace\"{}}}, "
                       "\"traceEvents\": [", run);
}

// What makes `event` unlike the events this code writes (for the message), or nothing: the fields it reads must be
// of their types (a hand-edited "dur": "a" ended a resumed run, its steps done, with an internal error).
std::optional<std::string> event_problem(nlohmann::json const& event) {
    if (!event.is_object()) return "is not a JSON object";
    for (char const* number : {"ts", "dur"}) {
        if (event.contains(number) && !event[number].is_number()) {
            return fmt::format("has a \"{}\" that is not a number", number);
        }
    }
    for (char const* integer : {"pid", "tid"}) {
        if (event.contains(integer) && !event[integer].is_number_integer()) {
            return fmt::format("has a \"{}\" that is not a whole number", integer);
        }
    }
    for (char const* text : {"name", "cat", "ph"}) {
        if (event.contains(text) && !event[text].is_string()) {
            return fmt::format("has a \"{}\" that is not a string", text);
        }
    }
    if (!event.contains("args")) return std::nullopt;
    nlohmann::json const& args = event["args"];
    if (!args.is_object()) return "has \"args\" that are not a JSON object";
    if (args.contains("launch") && !args["launch"].is_string()) return "names a launch that is not a string";
    return std::nullopt;
}

// The events a trace file holds, from a file this code wrote.
nlohmann::json trace_events(std::filesystem::path const& path) {
    std::string const text = read_input_file(path, "trace file", "name another --trace file", max_continued_bytes);
    nlohmann::json document;
    try {
        document = parse_guarded_json(text, 8);  // {"traceEvents": [{"args": {...}}]}
    } catch (Error const& e) {
        fail("trace file {} cannot be continued ({}): name another --trace file", path.string(), e.what());
    }
    AXONN_REQUIRE(document.is_object() && document.contains("traceEvents") && document["traceEvents"].is_array(),
                  "trace file {} cannot be continued (it holds no traceEvents list): name another --trace file",
                  path.string());
    nlohmann::json& events = document["traceEvents"];
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (std::optional<std::string> const problem = event_problem(events[i])) {
            fail("trace file {} cannot be continued (its event {} {}): name another --trace file", path.string(), i,
                 *problem);
        }
    }
    return std::move(events);
}

bool is_timed(nlohmann::json const& event) {
    return event.is_object() && event.value("ts", nlohmann::json()).is_number() && event.value("pid", -1) >= 0;
}

// The step a span of the steps track times ("step 12"), or nothing for any other event.
std::optional<std::int64_t> step_of(nlohmann::json const& event) {
    if (!is_timed(event) || event.value("cat", "") != "step") return std::nullopt;
    std::string const name = event.value("name", "");
    constexpr std::string_view prefix = "step ";
    if (!name.starts_with(prefix)) return std::nullopt;
    std::int64_t step = 0;
    char const* const end = name.data() + name.size();
    auto const [last, problem] = std::from_chars(name.data() + prefix.size(), end, step);
    if (problem != std::errc() || last != end) return std::nullopt;
    return step;
}

// The launch a step's span names (absent: a trace from before launches were recorded).
nlohmann::json launch_of(nlohmann::json const& event) {
    return event.contains("args") ? event["args"].value("launch", nlohmann::json()) : nlohmann::json();
}

// Drops the events of each process from its first span of step `from_step` or later on (the steps a resumed run
// takes again), or of a step that another launch than `lineage` names computed (rolled back). Events without a
// time (names of processes and tracks) stay.
void drop_steps_from(nlohmann::json& events, std::int64_t from_step, RunLineage const& lineage) {
    std::map<int, double> cut_us;  // by process
    for (nlohmann::json const& event : events) {
        std::optional<std::int64_t> const step = step_of(event);
        if (!step) continue;
        if (*step < from_step && of_lineage(lineage, *step, launch_of(event))) continue;
        auto [entry, added] = cut_us.try_emplace(event["pid"].get<int>(), event["ts"].get<double>());
        if (!added) entry->second = std::min(entry->second, event["ts"].get<double>());
    }
    nlohmann::json kept = nlohmann::json::array();
    for (nlohmann::json& event : events) {
        auto const cut = is_timed(event) ? cut_us.find(event["pid"].get<int>()) : cut_us.end();
        if (cut == cut_us.end() || event["ts"].get<double>() < cut->second) kept.push_back(std::move(event));
    }
    events = std::move(kept);
}

// The end of the last event on the timeline, in microseconds.
double end_of(nlohmann::json const& events) {
    double end_us = 0;
    for (nlohmann::json const& event : events) {
        if (is_timed(event)) end_us = std::max(end_us, event["ts"].get<double>() + event.value("dur", 0.0));
    }
    return end_us;
}

nlohmann::json name_of(char const* what, int pid, int tid, std::string const& name) {
    nlohmann::json event = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0) event["tid"] = tid;
    return event;
}

bool exists_now(std::filesystem::path const& path) {
    std::error_code error;
    return std::filesystem::exists(path, error);
}

}  // namespace

TraceFile::TraceFile(std::filesystem::path path, ProcessGrid& grid, ExistingDestination existing, TracedRun run)
    : path_(std::move(path)),
      existing_(exists_now(path_) ? ExistingDestination::replace : existing),
      grid_(grid),
      run_(std::move(run)),
      recorder_(max_events_per_rank) {
    // Every rank checks what it can see, so that a bad path is one clean error before any work (the rest, that it
    // can be written, rank 0 checked with the run's other outputs: output_kinds.h, require_output_file).
    require_existing_folder(path_, "--trace");
    require_not_a_folder(path_, "--trace", "trace.json");
}

void TraceFile::add_calls(std::vector<CollectiveRecord> const& calls) {
    if (recorder_.events().size() + calls_.size() + calls.size() > max_events_per_rank) return;
    calls_.insert(calls_.end(), calls.begin(), calls.end());
}

std::string TraceFile::rank_events_json() const {
    int const pid = grid_.rank();
    nlohmann::json events = nlohmann::json::array();
    events.push_back(name_of("process_name", pid, -1,
                             fmt::format("rank {}: data {}, z {}, y {}, x {}", pid, grid_.coord(Axis::data),
                                         grid_.coord(Axis::z), grid_.coord(Axis::y), grid_.coord(Axis::x))));
    events.push_back(nlohmann::json{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    events.push_back(name_of("thread_name", pid, steps_tid, "steps and layers"));
    events.push_back(name_of("thread_name", pid, kernels_tid, "kernels and waits"));
    for (TraceEvent const& event : recorder_.events()) {
        bool const steps = event.track == TraceTrack::steps;
        char const* category = steps ? "step" : event.category != nullptr ? event.category : "kernel";
        nlohmann::json traced = span(event.name, category, pid, steps ? steps_tid : kernels_tid, event.begin_s,
                                     event.end_s);
        if (steps && !run_.launch.empty() && step_of(traced)) traced["args"] = {{"launch", run_.launch}};
        events.push_back(std::move(traced));
    }
    // Collectives: each group's calls on lanes, a call going on the first lane free at its issue.
    std::vector<CollectiveRecord> calls = calls_;
    std::sort(calls.begin(), calls.end(), [](auto const& a, auto const& b) { return a.issued_s < b.issued_s; });
    std::map<std::pair<Group, int>, int> lane_tids;
    std::map<Group, std::vector<double>> lane_ends;
    for (CollectiveRecord const& call : calls) {
        std::vector<double>& ends = lane_ends[call.group];
        auto const free = std::find_if(ends.begin(), ends.end(), [&](double end) { return end <= call.issued_s; });
        int const lane = static_cast<int>(free - ends.begin());
        if (free == ends.end()) ends.push_back(call.completed_s);
        else *free = call.completed_s;
        auto [entry, added] = lane_tids.try_emplace({call.group, lane}, first_comm_tid + static_cast<int>(lane_tids.size()));
        if (added) {
            events.push_back(name_of("thread_name", pid, entry->second,
                                     fmt::format("comm {}{}", group_name(call.group), lane > 0 ? fmt::format(" #{}", lane + 1) : "")));
        }
        std::string const name = fmt::format("{} {} ({} B)", call.op, group_name(call.group), call.bytes);
        events.push_back(span(name, "collective", pid, entry->second, call.issued_s, call.completed_s));
        if (call.waited_s > 0) {
            events.push_back(span("wait " + name, "wait", pid, kernels_tid, call.wait_begin_s,
                                  call.wait_begin_s + call.waited_s));
        }
    }
    return events.dump();
}

std::string TraceFile::continued_events(std::string const& events) const {
    nlohmann::json continued = trace_events(path_);
    drop_steps_from(continued, *run_.resume_step, run_.lineage);
    double const end_us = end_of(continued);
    nlohmann::json added = nlohmann::json::parse("[" + events + "]");
    for (nlohmann::json& event : added) {
        if (event.contains("ts")) event["ts"] = event["ts"].get<double>() + end_us + continuation_gap_us;
        continued.push_back(std::move(event));
    }
    std::string text = continued.dump();
    return text.substr(1, text.size() - 2);  // the list's elements, without its brackets
}

void TraceFile::write() {
    std::vector<std::string> const ranks = grid_.comm(Group::world).gather_text(rank_events_json());
    if (grid_.rank() != 0) return;
    std::string events;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        std::string_view rank_events(ranks[r]);
        rank_events.remove_prefix(1);  // each is a JSON array: "[...]"
        rank_events.remove_suffix(1);
        if (rank_events.empty()) continue;
        if (!events.empty()) events += ",";
        events += rank_events;
    }
    bool const continues = run_.resume_step && is_trace_of_run(path_, run_.run_id);
    std::string const text = trace_header(run_.run_id) + (continues ? continued_events(events) : events) + "]}\n";
    // A continued trace goes back where it was read from, as the metrics file is appended to: through a symbolic
    // link, to the link's target (replacing the link left the target, the run's earlier trace, behind).
    std::error_code error;
    std::filesystem::path const destination = continues && std::filesystem::is_symlink(path_, error) ? resolved(path_)
                                                                                                     : path_;
    // Made now, not with the object: a partial file held for the whole run would be left behind by a job killed
    // during it, and block the next run's trace.
    AtomicFile file(destination, "trace file", existing_);
    file.write(text);
    file.commit();
}

void require_continuable_trace(std::filesystem::path const& path) {
    [[maybe_unused]] auto const events = trace_events(path);
}

std::optional<StepSpan> abandoned_steps(std::filesystem::path const& path, ResumedFrom const& from) {
    std::optional<StepSpan> steps;
    for (nlohmann::json const& event : trace_events(path)) {
        std::optional<std::int64_t> const step = step_of(event);
        if (step && abandoned_by(from, *step, launch_of(event))) widen(steps, *step);
    }
    return steps;
}

bool is_trace_of_run(std::filesystem::path const& path, std::string const& run_id) {
    struct stat info {};
    if (run_id.empty() || ::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return false;
    std::string const header = trace_header(run_id);
    InputFile const file = open_input_file(path, "trace file", "name another --trace file");
    if (static_cast<std::uint64_t>(file.info.st_size) < header.size()) return false;
    std::string start(header.size(), '\0');
    read_exactly(file, 0, start.data(), start.size(), "trace file");
    return start == header;
}

}  // namespace axonn
