#include "axonn/train/trace_file.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace axonn {
namespace {

constexpr int steps_tid = 1, kernels_tid = 2, first_comm_tid = 10;

nlohmann::json span(std::string const& name, char const* category, int pid, int tid, double begin_s, double end_s) {
    return {{"name", name}, {"cat", category}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
            {"ts", begin_s * 1e6}, {"dur", std::max(0.0, end_s - begin_s) * 1e6}};
}

nlohmann::json name_of(char const* what, int pid, int tid, std::string const& name) {
    nlohmann::json event = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0) event["tid"] = tid;
    return event;
}

}  // namespace

TraceFile::TraceFile(std::filesystem::path path, ProcessGrid& grid)
    : path_(std::move(path)), grid_(grid), recorder_(max_events_per_rank) {
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
        events.push_back(span(event.name, category, pid, steps ? steps_tid : kernels_tid, event.begin_s, event.end_s));
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

void TraceFile::write() {
    std::vector<std::string> const ranks = grid_.comm(Group::world).gather_text(rank_events_json());
    if (grid_.rank() != 0) return;
    std::string text = "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"producer\": \"axonn train --trace\"}, "
                       "\"traceEvents\": [";
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        std::string_view events(ranks[r]);
        events.remove_prefix(1);  // each is a JSON array: "[...]"
        events.remove_suffix(1);
        if (events.empty()) continue;
        if (text.back() != '[') text += ",";
        text += events;
    }
    text += "]}\n";
    // Made now, not with the object: a partial file held for the whole run would be left behind by a job killed
    // during it, and block the next run's trace.
    AtomicFile file(path_, "trace file");
    file.write(text);
    file.commit();
}

}  // namespace axonn
