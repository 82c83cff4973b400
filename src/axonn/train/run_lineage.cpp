#include "axonn/train/run_lineage.h"

#include "axonn/core/error.h"

#include <algorithm>

namespace axonn {

std::string launch_at(RunLineage const& lineage, std::int64_t step) {
    std::string covering;
    for (Launch const& launch : lineage) {
        if (launch.from_step <= step) covering = launch.id;
    }
    return covering;
}

bool of_lineage(RunLineage const& lineage, std::int64_t step, nlohmann::json const& launch) {
    std::string const expected = launch_at(lineage, step);
    return expected.empty() || !launch.is_string() || launch.get<std::string>() == expected;
}

bool abandoned_by(ResumedFrom const& resumed, std::int64_t step, nlohmann::json const& launch) {
    if (step < resumed.step) return !of_lineage(resumed.lineage, step, launch);
    if (!launch.is_string()) return false;
    return std::any_of(resumed.set_aside.begin(), resumed.set_aside.end(), [&](SetAsideBranch const& branch) {
        return step <= branch.step && launch_at(branch.lineage, step) == launch.get<std::string>();
    });
}

void widen(std::optional<StepSpan>& span, std::int64_t step) {
    if (!span) span = StepSpan{step, step};
    span->first = std::min(span->first, step);
    span->last = std::max(span->last, step);
}

nlohmann::json lineage_json(RunLineage const& lineage) {
    nlohmann::json list = nlohmann::json::array();
    for (Launch const& launch : lineage) list.push_back({{"from_step", launch.from_step}, {"launch", launch.id}});
    return list;
}

bool is_hex_id(nlohmann::json const& id) {
    if (!id.is_string()) return false;
    std::string const& text = id.get_ref<std::string const&>();
    return text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

RunLineage lineage_from_json(nlohmann::json const& run, std::int64_t step, std::string const& where) {
    if (!run.is_object() || !run.contains("lineage")) return {};
    nlohmann::json const& list = run["lineage"];
    AXONN_REQUIRE(list.is_array(), "checkpoint {} is damaged: its run state's lineage is {}, not a list", where,
                  list.dump());
    RunLineage lineage;
    for (nlohmann::json const& entry : list) {
        bool const has_step = entry.is_object() && entry.contains("from_step") && entry["from_step"].is_number_integer();
        std::int64_t const from_step = has_step ? entry["from_step"].get<std::int64_t>() : -1;
        bool const valid = from_step >= 0 && from_step <= step && entry.contains("launch") &&
                           is_hex_id(entry["launch"]) && (lineage.empty() || from_step >= lineage.back().from_step);
        AXONN_REQUIRE(valid,
                      "checkpoint {} is damaged: its run state's lineage holds {}, not a launch "
                      "{{\"from_step\", \"launch\": 16 hex digits}} in step order, from a step up to its own ({})",
                      where, entry.dump(), step);
        lineage.push_back({from_step, entry["launch"].get<std::string>()});
    }
    return lineage;
}

}  // namespace axonn
