#include "axonn/train/run_lineage.h"

#include "axonn/core/error.h"

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

nlohmann::json lineage_json(RunLineage const& lineage) {
    nlohmann::json list = nlohmann::json::array();
    for (Launch const& launch : lineage) list.push_back({{"from_step", launch.from_step}, {"launch", launch.id}});
    return list;
}

RunLineage lineage_from_json(nlohmann::json const& run, std::string const& where) {
    if (!run.is_object() || !run.contains("lineage")) return {};
    nlohmann::json const& list = run["lineage"];
    AXONN_REQUIRE(list.is_array(), "checkpoint {} is damaged: its run state's lineage is {}, not a list", where,
                  list.dump());
    RunLineage lineage;
    for (nlohmann::json const& entry : list) {
        bool const valid = entry.is_object() && entry.contains("from_step") && entry["from_step"].is_number_integer() &&
                           entry["from_step"].get<std::int64_t>() >= 0 && entry.contains("launch") &&
                           entry["launch"].is_string() &&
                           (lineage.empty() || entry["from_step"].get<std::int64_t>() >= lineage.back().from_step);
        AXONN_REQUIRE(valid,
                      "checkpoint {} is damaged: its run state's lineage holds {}, not a launch "
                      "{{\"from_step\", \"launch\"}} in step order",
                      where, entry.dump());
        lineage.push_back({entry["from_step"].get<std::int64_t>(), entry["launch"].get<std::string>()});
    }
    return lineage;
}

}  // namespace axonn
