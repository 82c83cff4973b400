// Machine profiles as TOML files: reading them with toml++, checking every key, type and range, and writing them
// back in the same form.
#include "axonn/perf/machine_profile.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/toml_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string_view>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view bus_bandwidth_section = "allreduce_bus_bandwidth";

// Every number of a profile, in the order a written file lists them, with the range of values a real machine can
// have: a value outside it is a typo or a wrong unit, and would turn every prediction into 0, inf or nan.
// Exactly one of `number` and `count` is set.
struct NumericKey {
    std::string_view key;
    double MachineProfile::*number = nullptr;
    int MachineProfile::*count = nullptr;
    double min = 0;
    double max = 0;
    std::string_view unit;
};

constexpr double flops_min = 1e6, flops_max = 1e18;          // FLOP/s of one device
constexpr double link_min = 1e3, link_max = 1e14;            // bytes/s of a link or a collective
constexpr double latency_min = 1e-9, latency_max = 1;        // seconds per message step

constexpr NumericKey numeric_keys[] = {
    {.key = "devices_per_node", .count = &MachineProfile::devices_per_node, .min = 1, .max = 65536, .unit = ""},
    {.key = "peak_flops_fp32", .number = &MachineProfile::peak_flops_fp32, .min = flops_min, .max = flops_max,
     .unit = "FLOP/s"},
    {.key = "peak_flops_bf16", .number = &MachineProfile::peak_flops_bf16, .min = flops_min, .max = flops_max,
     .unit = "FLOP/s"},
    {.key = "gemm_efficiency", .number = &MachineProfile::gemm_efficiency, .min = 1e-3, .max = 1, .unit = ""},
    {.key = "gemm_half_size", .number = &MachineProfile::gemm_half_size, .min = 1, .max = 1e6, .unit = ""},
    {.key = "memory_bytes", .number = &MachineProfile::memory_bytes, .min = 1e6, .max = 1e15, .unit = "bytes"},
    {.key = "memory_bandwidth", .number = &MachineProfile::memory_bandwidth, .min = 1e6, .max = 1e15,
     .unit = "bytes/s"},
    {.key = "intra_node_bandwidth", .number = &MachineProfile::intra_node_bandwidth, .min = link_min,
     .max = link_max, .unit = "bytes/s"},
    {.key = "intra_node_latency", .number = &MachineProfile::intra_node_latency, .min = latency_min,
     .max = latency_max, .unit = "s"},
    {.key = "nic_bandwidth", .number = &MachineProfile::nic_bandwidth, .min = link_min, .max = link_max,
     .unit = "bytes/s"},
    {.key = "inter_node_latency", .number = &MachineProfile::inter_node_latency, .min = latency_min,
     .max = latency_max, .unit = "s"},
    {.key = "nics_per_node", .count = &MachineProfile::nics_per_node, .min = 1, .max = 1024, .unit = ""},
};

// Optional: 0 (absent) means no shared link, and a node injecting what its cards carry.
constexpr NumericKey shared_link_key = {.key = "shared_link_bandwidth",
                                        .number = &MachineProfile::shared_link_bandwidth,
                                        .min = link_min,
                                        .max = link_max,
                                        .unit = "bytes/s"};
constexpr NumericKey node_bandwidth_key = {.key = "node_bandwidth",
                                           .number = &MachineProfile::node_bandwidth,
                                           .min = link_min,
                                           .max = link_max,
                                           .unit = "bytes/s"};
constexpr NumericKey network_group_key = {.key = "network_group_nodes",
                                          .number = &MachineProfile::network_group_nodes,
                                          .min = 1,
                                          .max = 1e6,
                                          .unit = "nodes"};
constexpr NumericKey global_fraction_key = {.key = "global_bandwidth_fraction",
                                            .number = &MachineProfile::global_bandwidth_fraction,
                                            .min = 1e-3,
                                            .max = 1,
                                            .unit = ""};
constexpr NumericKey compute_slowdown_key = {.key = "overlapped_compute_slowdown",
                                             .number = &MachineProfile::overlapped_compute_slowdown,
                                             .min = 0,
                                             .max = 10,
                                             .unit = ""};
constexpr NumericKey const* optional_keys[] = {&shared_link_key, &node_bandwidth_key, &network_group_key,
                                               &global_fraction_key, &compute_slowdown_key};

// [allreduce_bus_bandwidth_strideN]: the bus bandwidths of groups N ranks apart; 0 if `name` is no such section.
constexpr std::string_view strided_prefix = "allreduce_bus_bandwidth_stride";
int section_stride(std::string_view name) {
    if (!name.starts_with(strided_prefix)) return 0;
    name.remove_prefix(strided_prefix.size());
    int stride = 0;
    auto const [end, error] = std::from_chars(name.data(), name.data() + name.size(), stride);
    return error == std::errc{} && end == name.data() + name.size() && stride >= 2 ? stride : 0;
}

double numeric_value(MachineProfile const& profile, NumericKey const& numeric) {
    return numeric.number ? profile.*numeric.number : profile.*numeric.count;
}

// The keys a profile must have: the two texts and every number. The shared link and the bus-bandwidth section
// are optional.
std::vector<std::string> required_keys() {
    std::vector<std::string> keys = {"name", "description"};
    for (NumericKey const& numeric : numeric_keys) keys.emplace_back(numeric.key);
    return keys;
}

std::string known_keys_text() {
    std::vector<std::string_view> optional;
    for (NumericKey const* key : optional_keys) optional.push_back(key->key);
    return fmt::format("{}, optionally {}, and sections [{}] and [{}N] (N ≥ 2)", fmt::join(required_keys(), ", "),
                       fmt::join(optional, ", "), bus_bandwidth_section, strided_prefix);
}

std::string range_text(NumericKey const& numeric) {
    return fmt::format("[{:g}, {:g}]{}{}", numeric.min, numeric.max, numeric.unit.empty() ? "" : " ", numeric.unit);
}

// A number of the profile: the right TOML type, finite and within its key's range.
double checked_number(toml::node const& node, NumericKey const& numeric, std::string const& name,
                      fs::path const& path) {
    std::string const where = toml_location(node, path);
    bool const integral = numeric.count != nullptr;
    AXONN_REQUIRE(node.is_integer() || (!integral && node.is_floating_point()),
                  "{}: key '{}' is {}, not {}: write it like "
                  "{}",
                  where, name, toml_type_name(node), integral ? "an integer" : "a number", integral ? "4" : "2.5e10");
    double const value = node.value<double>().value_or(NAN);
    AXONN_REQUIRE(std::isfinite(value) && value >= numeric.min && value <= numeric.max,
                  "{}: key '{}' = {:g} is outside the range a machine can have, {}: check the value and its unit",
                  where, name, value, range_text(numeric));
    return value;
}

void set_number(MachineProfile& profile, NumericKey const& numeric, toml::node const& node, fs::path const& path) {
    double const value = checked_number(node, numeric, std::string(numeric.key), path);
    if (numeric.number) {
        profile.*numeric.number = value;
    } else {
        profile.*numeric.count = static_cast<int>(value);
    }
}

std::string checked_text(toml::node const& node, std::string_view key, fs::path const& path) {
    AXONN_REQUIRE(node.is_string(), "{}: key '{}' is {}, not a string: write it in quotes", toml_location(node, path),
                  key, toml_type_name(node));
    return node.value<std::string>().value_or("");
}

// A section of group size = bus bandwidth lines, [allreduce_bus_bandwidth] or a strided one, into `bandwidths`.
void read_bus_bandwidths(std::map<int, double>& bandwidths, std::string_view section_name, toml::node const& section,
                         fs::path const& path) {
    toml::table const* table = section.as_table();
    AXONN_REQUIRE(table != nullptr, "{}: '{}' is {}, not a section: write [{}] and then lines such as 4 = 2.25e11",
                  toml_location(section, path), section_name, toml_type_name(section), section_name);
    NumericKey const bandwidth{.key = "", .number = &MachineProfile::shared_link_bandwidth, .min = link_min,
                               .max = link_max, .unit = "bytes/s"};
    for (auto const& [key, node] : *table) {
        std::string_view const name = key.str();
        int group_size = 0;
        auto const [end, error] = std::from_chars(name.data(), name.data() + name.size(), group_size);
        AXONN_REQUIRE(error == std::errc{} && end == name.data() + name.size() && group_size >= 2,
                      "{}: key '{}' of [{}] is not a group size: the keys there are integers of at least 2, such as "
                      "4 = 2.25e11",
                      toml_location(key, path), name, section_name);
        bandwidths[group_size] = checked_number(node, bandwidth, fmt::format("{}.{}", section_name, name), path);
    }
}

NumericKey const* find_numeric_key(std::string_view name) {
    for (NumericKey const* optional : optional_keys) {
        if (name == optional->key) return optional;
    }
    auto const numeric = std::find_if(std::begin(numeric_keys), std::end(numeric_keys),
                                      [&](NumericKey const& k) { return k.key == name; });
    return numeric == std::end(numeric_keys) ? nullptr : numeric;
}

MachineProfile parse_profile(fs::path const& path) {
    toml::table const table = read_toml_file(path, "machine profile", "name a profile file");
    MachineProfile profile;
    for (auto const& [key, node] : table) {
        std::string_view const name = key.str();
        if (name == "name") {
            profile.name = checked_text(node, name, path);
            AXONN_REQUIRE(!profile.name.empty(), "{}: key 'name' is empty: name the machine",
                          toml_location(node, path));
        } else if (name == "description") {
            profile.description = checked_text(node, name, path);
        } else if (name == bus_bandwidth_section) {
            read_bus_bandwidths(profile.allreduce_bus_bandwidth, name, node, path);
        } else if (int const stride = section_stride(name)) {
            read_bus_bandwidths(profile.strided_bus_bandwidth[stride], name, node, path);
        } else if (NumericKey const* numeric = find_numeric_key(name)) {
            set_number(profile, *numeric, node, path);
        } else {
            fail("{}: unknown {} '{}': the keys are {}", toml_location(key, path),
                 node.is_table() ? "section" : "key", name, known_keys_text());
        }
    }
    for (std::string const& key : required_keys()) {
        AXONN_REQUIRE(table.contains(key), "{}: missing key '{}': a profile sets {}", path.string(), key,
                      known_keys_text());
    }
    AXONN_REQUIRE((profile.network_group_nodes > 0) == (profile.global_bandwidth_fraction > 0),
                  "{}: '{}' and '{}' go together: set both (a dragonfly's nodes per group, and the share of a group's "
                  "injection bandwidth its links to another group carry) or neither",
                  path.string(), network_group_key.key, global_fraction_key.key);
    return profile;
}

std::vector<std::string> available_profiles(fs::path const& dir) {
    std::vector<std::string> names;
    std::error_code error;
    for (fs::directory_iterator entries(dir, error); !error && entries != fs::directory_iterator();
         entries.increment(error)) {
        if (entries->path().extension() == ".toml") names.push_back(entries->path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

// The profiles that come with axonn (Perlmutter, Frontier, Alps), in the source tree's configs/machines.
fs::path bundled_profile_dir() { return fs::path(AXONN_SOURCE_DIR) / "configs" / "machines"; }

// The folders a profile's name is looked for in: the machine folder, then the bundled profiles where that is another
// ($AXONN_MACHINES_DIR moves where `local` and the tuned grid are, and hid the bundled profiles that --help offers).
std::vector<fs::path> profile_dirs() {
    fs::path const dir = machine_profile_dir();
    if (dir == bundled_profile_dir()) return {dir};
    return {dir, bundled_profile_dir()};
}

// "choose one of alps, frontier, perlmutter (the .toml files in DIR); set AXONN_MACHINES_DIR ..." for an error.
std::string profile_choices() {
    std::vector<std::string> places, empty;
    for (fs::path const& dir : profile_dirs()) {
        std::vector<std::string> const names = available_profiles(dir);
        if (names.empty()) empty.push_back(dir.string());
        else places.push_back(fmt::format("{} (the .toml files in {})", fmt::join(names, ", "), dir.string()));
    }
    std::string const choices = places.empty() ? fmt::format("{} hold no .toml profiles", fmt::join(empty, " and "))
                                               : fmt::format("choose one of {}", fmt::join(places, ", or "));
    return choices + "; set AXONN_MACHINES_DIR for another folder, or give a path to a .toml file";
}

// The shortest text that reads back as exactly `value`, in scientific form where that is shorter: 2.5e+10, 0.85.
std::string round_trip_text(double value) {
    for (int digits = 1;; ++digits) {
        std::string const text = fmt::format("{:.{}g}", value, digits);
        if (digits >= 17 || std::strtod(text.c_str(), nullptr) == value) return text;
    }
}

// A profile that would not read back is refused before anything is written.
void check_writable(MachineProfile const& profile, std::string const& file) {
    AXONN_REQUIRE(!profile.name.empty(), "cannot write machine profile {}: it has no name", file);
    auto check = [&](NumericKey const& numeric, double value) {
        AXONN_REQUIRE(std::isfinite(value) && value >= numeric.min && value <= numeric.max,
                      "cannot write machine profile {}: {} = {:g} is outside {}", file, numeric.key, value,
                      range_text(numeric));
    };
    for (NumericKey const& numeric : numeric_keys) check(numeric, numeric_value(profile, numeric));
    for (NumericKey const* optional : optional_keys) {
        if (profile.*optional->number > 0) check(*optional, profile.*optional->number);
    }
    auto const check_section = [&](std::map<int, double> const& bandwidths, int stride) {
        for (auto const& [group_size, bandwidth] : bandwidths) {
            AXONN_REQUIRE(
                group_size >= 2 && std::isfinite(bandwidth) && bandwidth >= link_min && bandwidth <= link_max,
                "cannot write machine profile {}: all-reduce bus bandwidth {:g} for a group of {} at stride {} is "
                "outside [{:g}, {:g}] bytes/s",
                file, bandwidth, group_size, stride, link_min, link_max);
        }
    };
    check_section(profile.allreduce_bus_bandwidth, 1);
    for (auto const& [stride, bandwidths] : profile.strided_bus_bandwidth) {
        AXONN_REQUIRE(stride >= 2,
                      "cannot write machine profile {}: a bus-bandwidth stride of {} (strides are at least 2)", file,
                      stride);
        check_section(bandwidths, stride);
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
    return bundled_profile_dir();
}

fs::path machine_profile_path(std::string const& name_or_path) {
    AXONN_REQUIRE(!name_or_path.empty(), "no machine profile given: {}", profile_choices());
    if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".toml")) return name_or_path;
    fs::path const path = machine_profile_dir() / (name_or_path + ".toml");
    std::error_code error;
    for (fs::path const& dir : profile_dirs()) {
        if (fs::exists(dir / (name_or_path + ".toml"), error)) return dir / (name_or_path + ".toml");
        if (error) break;
    }
    // `local`, which --help names, is what `axonn calibrate` writes: a machine not yet measured.
    AXONN_REQUIRE(static_cast<bool>(error) || name_or_path != "local",
                  "machine profile 'local' is not written yet: measure this machine with `axonn calibrate --out {}`, "
                  "or {}", path.string(), profile_choices());
    AXONN_REQUIRE(static_cast<bool>(error), "unknown machine profile '{}': {}", name_or_path, profile_choices());
    fail("machine profile {} cannot be examined: {}", path.string(), error.message());
}

MachineProfile load_machine_profile(std::string const& name_or_path) {
    return parse_profile(machine_profile_path(name_or_path));
}

void write_machine_profile(fs::path const& path, MachineProfile const& profile, std::string const& notes,
                           ExistingDestination existing) {
    check_writable(profile, path.string());
    std::string text = comment_lines(notes);
    text += fmt::format("name = {}\ndescription = {}\n", toml_quoted(profile.name), toml_quoted(profile.description));
    for (NumericKey const& numeric : numeric_keys) {
        text += numeric.number ? fmt::format("{} = {}\n", numeric.key, round_trip_text(profile.*numeric.number))
                               : fmt::format("{} = {}\n", numeric.key, profile.*numeric.count);
    }
    for (NumericKey const* optional : optional_keys) {
        if (profile.*optional->number > 0) {
            text += fmt::format("{} = {}\n", optional->key, round_trip_text(profile.*optional->number));
        }
    }
    auto const write_section = [&text](std::string const& name, std::map<int, double> const& bandwidths) {
        if (bandwidths.empty()) return;
        text += fmt::format("\n[{}]\n", name);
        for (auto const& [group_size, bandwidth] : bandwidths) {
            text += fmt::format("{} = {}\n", group_size, round_trip_text(bandwidth));
        }
    };
    write_section(std::string(bus_bandwidth_section), profile.allreduce_bus_bandwidth);
    for (auto const& [stride, bandwidths] : profile.strided_bus_bandwidth) {
        write_section(fmt::format("{}{}", strided_prefix, stride), bandwidths);
    }
    write_file_atomically(path, text, "machine profile", existing);
}

}  // namespace axonn
