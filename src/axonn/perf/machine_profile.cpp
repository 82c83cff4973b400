// Machine profiles as TOML files: reading them through CLI11's TOML parser (the one that reads --config files),
// checking every key and value, and writing them back in the same form.
#include "axonn/perf/machine_profile.h"

#include "axonn/core/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>
#include <type_traits>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view bus_bandwidth_section = "allreduce_bus_bandwidth";

// Every number of a profile, in the order a written file lists them. Exactly one of the two members is set.
struct NumericKey {
    std::string_view key;
    double MachineProfile::*number = nullptr;
    int MachineProfile::*count = nullptr;
};

constexpr NumericKey numeric_keys[] = {
    {.key = "devices_per_node", .count = &MachineProfile::devices_per_node},
    {.key = "peak_flops_fp32", .number = &MachineProfile::peak_flops_fp32},
    {.key = "peak_flops_bf16", .number = &MachineProfile::peak_flops_bf16},
    {.key = "gemm_efficiency", .number = &MachineProfile::gemm_efficiency},
    {.key = "gemm_half_size", .number = &MachineProfile::gemm_half_size},
    {.key = "memory_bytes", .number = &MachineProfile::memory_bytes},
    {.key = "memory_bandwidth", .number = &MachineProfile::memory_bandwidth},
    {.key = "intra_node_bandwidth", .number = &MachineProfile::intra_node_bandwidth},
    {.key = "intra_node_latency", .number = &MachineProfile::intra_node_latency},
    {.key = "nic_bandwidth", .number = &MachineProfile::nic_bandwidth},
    {.key = "inter_node_latency", .number = &MachineProfile::inter_node_latency},
    {.key = "nics_per_node", .count = &MachineProfile::nics_per_node},
};

double numeric_value(MachineProfile const& profile, NumericKey const& numeric) {
    return numeric.number ? profile.*numeric.number : profile.*numeric.count;
}

// The keys a profile must have: the two texts and every number. The bus-bandwidth section is optional.
std::vector<std::string> required_keys() {
    std::vector<std::string> keys = {"name", "description"};
    for (NumericKey const& numeric : numeric_keys) keys.emplace_back(numeric.key);
    return keys;
}

std::string known_keys_text() {
    return fmt::format("{}, optionally shared_link_bandwidth, and a section [{}]", fmt::join(required_keys(), ", "),
                       bus_bandwidth_section);
}

// CLI11 splits a value at commas and spaces outside quotes, and joins a key repeated on the next line into one
// item; a key of a profile holds exactly one value.
std::string single_value(CLI::ConfigItem const& item, std::string const& file) {
    require(item.inputs.size() == 1,
            "{}: key '{}' has {} values (a list, or the key repeated): give it one, a quoted text or a number like "
            "2.5e10", file, item.fullname(), item.inputs.size());
    return item.inputs.front();
}

template <typename T>
T positive_number(std::string const& text, std::string const& key, std::string const& file) {
    T value{};
    auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    bool const parsed = error == std::errc{} && end == text.data() + text.size();
    require(parsed && std::isfinite(static_cast<double>(value)) && value > 0,
            "{}: key '{}' = '{}' is not a positive {}: write it like {}", file, key, text,
            std::is_integral_v<T> ? "integer" : "number", std::is_integral_v<T> ? "4" : "2.5e10");
    return value;
}

void set_top_level_key(MachineProfile& profile, CLI::ConfigItem const& item, std::string const& file) {
    std::string const value = single_value(item, file);
    if (item.name == "name") {
        require(!value.empty(), "{}: key 'name' is empty: name the machine", file);
        profile.name = value;
        return;
    }
    if (item.name == "description") {
        profile.description = value;
        return;
    }
    if (item.name == "shared_link_bandwidth") {  // optional, unlike the numbers below
        profile.shared_link_bandwidth = positive_number<double>(value, item.name, file);
        return;
    }
    auto const numeric = std::find_if(std::begin(numeric_keys), std::end(numeric_keys),
                                      [&](NumericKey const& k) { return k.key == item.name; });
    require(numeric != std::end(numeric_keys), "{}: unknown key '{}': the keys are {}", file, item.name,
            known_keys_text());
    if (numeric->number) {
        profile.*numeric->number = positive_number<double>(value, item.name, file);
    } else {
        profile.*numeric->count = positive_number<int>(value, item.name, file);
    }
}

void set_bus_bandwidth(MachineProfile& profile, CLI::ConfigItem const& item, std::string const& file) {
    int group_size = 0;
    auto const [end, error] = std::from_chars(item.name.data(), item.name.data() + item.name.size(), group_size);
    require(error == std::errc{} && end == item.name.data() + item.name.size() && group_size >= 2,
            "{}: key '{}' is not a group size: the keys of [{}] are integers of at least 2, such as 4 = 2.25e11", file,
            item.fullname(), bus_bandwidth_section);
    profile.allreduce_bus_bandwidth[group_size] =
        positive_number<double>(single_value(item, file), item.fullname(), file);
}

// CLI11 marks where a [section] opens and closes with items named "++" and "--".
bool is_section_marker(CLI::ConfigItem const& item) { return item.name == "++" || item.name == "--"; }

bool in_bus_section(CLI::ConfigItem const& item) {
    return item.parents.size() == 1 && item.parents.front() == bus_bandwidth_section;
}

void check_known_section(CLI::ConfigItem const& item, std::string const& file) {
    if (item.parents.empty() || in_bus_section(item)) return;
    if (is_section_marker(item)) {
        fail("{}: unknown section [{}]: the keys are {}", file, fmt::join(item.parents, "."), known_keys_text());
    }
    fail("{}: unknown key '{}': the keys are {}", file, item.fullname(), known_keys_text());
}

std::vector<CLI::ConfigItem> read_items(fs::path const& path) {
    require(fs::is_regular_file(path), "machine profile {}: no such file", path.string());
    try {
        return CLI::ConfigTOML().from_file(path.string());
    } catch (CLI::Error const& e) {
        fail("machine profile {}: {}", path.string(), e.what());
    }
}

MachineProfile parse_profile(fs::path const& path) {
    std::string const file = path.string();
    MachineProfile profile;
    std::set<std::string> seen;
    for (CLI::ConfigItem const& item : read_items(path)) {
        check_known_section(item, file);
        if (is_section_marker(item)) continue;
        require(seen.insert(item.fullname()).second, "{}: key '{}' appears twice: keep one", file, item.fullname());
        if (item.parents.empty()) {
            set_top_level_key(profile, item, file);
        } else {
            set_bus_bandwidth(profile, item, file);
        }
    }
    for (std::string const& key : required_keys()) {
        require(seen.contains(key), "{}: missing key '{}': a profile sets {}", file, key, known_keys_text());
    }
    return profile;
}

std::vector<std::string> available_profiles(fs::path const& dir) {
    std::vector<std::string> names;
    if (fs::is_directory(dir)) {
        for (fs::directory_entry const& entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

// "choose one of alps, frontier, perlmutter (the .toml files in DIR); set AXONN_MACHINES_DIR ..." for an error.
std::string profile_choices() {
    fs::path const dir = machine_profile_dir();
    std::vector<std::string> const names = available_profiles(dir);
    std::string const choices = names.empty() ? fmt::format("{} holds no .toml profiles", dir.string())
                                              : fmt::format("choose one of {} (the .toml files in {})",
                                                            fmt::join(names, ", "), dir.string());
    return choices + "; set AXONN_MACHINES_DIR for another folder, or give a path to a .toml file";
}

fs::path resolve_profile_path(std::string const& name_or_path) {
    if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".toml")) return name_or_path;
    fs::path const path = machine_profile_dir() / (name_or_path + ".toml");
    require(fs::is_regular_file(path), "unknown machine profile '{}': {}", name_or_path, profile_choices());
    return path;
}

// The shortest text that reads back as exactly `value`, in scientific form where that is shorter: 2.5e+10, 0.85.
std::string round_trip_text(double value) {
    for (int digits = 1;; ++digits) {
        std::string const text = fmt::format("{:.{}g}", value, digits);
        if (digits >= 17 || std::strtod(text.c_str(), nullptr) == value) return text;
    }
}

// CLI11 ends a value at '#' (a comment) and keeps no escapes, so a name or description must not hold these.
void check_writable_text(std::string const& text, std::string_view key, std::string const& file) {
    require(text.find_first_of("\"#\\\n\r") == std::string::npos,
            "cannot write machine profile {}: its {} '{}' contains a quote, '#', backslash or line break", file, key,
            text);
}

void check_writable(MachineProfile const& profile, std::string const& file) {
    require(!profile.name.empty(), "cannot write machine profile {}: it has no name", file);
    check_writable_text(profile.name, "name", file);
    check_writable_text(profile.description, "description", file);
    for (NumericKey const& numeric : numeric_keys) {
        double const value = numeric_value(profile, numeric);
        require(std::isfinite(value) && value > 0, "cannot write machine profile {}: {} = {} is not positive", file,
                numeric.key, value);
    }
    for (auto const& [group_size, bandwidth] : profile.allreduce_bus_bandwidth) {
        require(group_size >= 2 && std::isfinite(bandwidth) && bandwidth > 0,
                "cannot write machine profile {}: all-reduce bus bandwidth {} for a group of {} is not positive", file,
                bandwidth, group_size);
    }
}

std::string comment_lines(std::string_view notes) {
    std::string text;
    while (!notes.empty()) {
        std::size_t const end = std::min(notes.find('\n'), notes.size());
        text += fmt::format("# {}\n", notes.substr(0, end));
        notes.remove_prefix(std::min(end + 1, notes.size()));
    }
    return text;
}

}  // namespace

fs::path machine_profile_dir() {
    char const* from_environment = std::getenv("AXONN_MACHINES_DIR");
    if (from_environment != nullptr && *from_environment != '\0') return from_environment;
    return fs::path(AXONN_SOURCE_DIR) / "configs" / "machines";
}

MachineProfile load_machine_profile(std::string const& name_or_path) {
    require(!name_or_path.empty(), "no machine profile given: {}", profile_choices());
    return parse_profile(resolve_profile_path(name_or_path));
}

void write_machine_profile(fs::path const& path, MachineProfile const& profile, std::string const& notes) {
    check_writable(profile, path.string());
    std::string text = comment_lines(notes);
    text += fmt::format("name = \"{}\"\ndescription = \"{}\"\n", profile.name, profile.description);
    for (NumericKey const& numeric : numeric_keys) {
        text += numeric.number ? fmt::format("{} = {}\n", numeric.key, round_trip_text(profile.*numeric.number))
                               : fmt::format("{} = {}\n", numeric.key, profile.*numeric.count);
    }
    if (profile.shared_link_bandwidth > 0) {
        text += fmt::format("shared_link_bandwidth = {}\n", round_trip_text(profile.shared_link_bandwidth));
    }
    if (!profile.allreduce_bus_bandwidth.empty()) {
        text += fmt::format("\n[{}]\n", bus_bandwidth_section);
        for (auto const& [group_size, bandwidth] : profile.allreduce_bus_bandwidth) {
            text += fmt::format("{} = {}\n", group_size, round_trip_text(bandwidth));
        }
    }
    std::ofstream out(path);
    out << text;
    require(static_cast<bool>(out), "cannot write machine profile {}: check that its folder exists and is writable",
            path.string());
}

}  // namespace axonn
