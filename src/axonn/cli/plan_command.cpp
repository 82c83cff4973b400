#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/step_options.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/families/registry.h"
#include "axonn/io/line_plot.h"
#include "axonn/perf/machine_profile.h"
#include "axonn/perf/planner.h"
#include "axonn/perf/weak_scaling.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

namespace axonn {
namespace {

struct PlanFlags {
    int seq = 0;  // 0: the model's context
    int top = 15;
    bool json = false;
    bool explain = false;
    std::string machine = "perlmutter";
    std::string order = "x,y,z,data";
    StepOptions run;  // as `axonn train` takes them, and with its defaults
    std::string weak_scaling;  // MODEL:DEVICES,...; empty: one plan
    std::string weak_batch = "per-device";  // the series' batch: grows with the devices, or fixed
    std::filesystem::path plot = "weak-scaling.png";
    bool overwrite = false;  // replace an existing --plot file
    int vocab = 0;           // 0: the preset's
};

nlohmann::json candidate_json(PlanCandidate const& candidate) {
    nlohmann::json exposed, comm;
    for (auto const& [group, seconds] : candidate.time.exposed_by_group) exposed[group_name(group)] = seconds;
    for (auto const& [group, seconds] : candidate.time.comm_by_group) comm[group_name(group)] = seconds;
    GridShape const& g = candidate.grid;
    nlohmann::json record = {{"grid", {{"data", g.data}, {"z", g.z}, {"y", g.y}, {"x", g.x}}},
                             {"time_s", candidate.time.time_s},
                             {"exposed_comm_s", candidate.time.exposed_comm_s},
                             {"exposed_comm_by_axis_s", exposed},
                             {"comm_s", candidate.time.comm_s},
                             {"comm_by_axis_s", comm},
                             {"compute_s", candidate.time.gemm_s + candidate.time.other_compute_s},
                             {"gemm_s", candidate.time.gemm_s},
                             {"other_compute_s", candidate.time.other_compute_s},
                             {"forward_compute_s", candidate.time.forward_compute_s},
                             {"backward_compute_s", candidate.time.backward_compute_s},
                             {"memory_bytes", candidate.memory.total()},
                             {"flops_per_s", candidate.flops_per_s},
                             {"pct_peak", candidate.pct_peak},
                             {"hardware_flops_per_s", candidate.hardware_flops_per_s},
                             {"hardware_pct_peak", candidate.hardware_pct_peak},
                             {"largest_call_bytes", candidate.time.largest_call_bytes},
                             {"split_collectives", candidate.split_collectives},
                             {"vocab_split", vocab_split_name(candidate.vocab_split)}};
    if (candidate.excluded) record["excluded"] = *candidate.excluded;
    return record;
}

void print_table(std::vector<PlanCandidate> const& candidates, int top) {
    fmt::print("{:<4} {:<24} {:>5} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>11} {:>7}\n", "rank", "grid",
               "vocab", "time (s)", "exposed", "data", "z", "y", "x", "mem (GiB)", "% peak", "PFLOP/s", "hw %");
    int shown = 0;
    for (auto const& c : candidates) {
        if (c.excluded || shown == top) break;
        auto exposed = [&c](Group g) {
            auto const it = c.time.exposed_by_group.find(g);
            return it == c.time.exposed_by_group.end() ? 0.0 : it->second;
        };
        fmt::print("{:<4} {:<24} {:>5} {:>10.3f} {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.1f} {:>7.1f} "
                   "{:>11.2f} {:>7.1f}\n",
                   ++shown, c.grid.to_string() + (c.split_collectives ? "*" : ""), vocab_split_name(c.vocab_split),
                   c.time.time_s, c.time.exposed_comm_s, exposed(Group::data),
                   exposed(Group::z), exposed(Group::y), exposed(Group::x), c.memory.total() / 1073741824.0,
                   c.pct_peak, c.flops_per_s / 1e15, c.hardware_pct_peak);
    }
    // Reached with no grid only under --explain (a plan with none fails first), whose exclusions follow.
    if (shown == 0) fmt::print("no grid fits: why each was excluded follows\n");
    bool const any_split = std::any_of(candidates.begin(), candidates.begin() + shown,
                                       [](PlanCandidate const& c) { return c.split_collectives; });
    if (any_split) {
        fmt::print("* a collective of this grid moves more than 2^31 - 1 elements per rank: it runs as several MPI "
                   "calls\n");
    }
}

// The jobs of --weak-scaling MODEL:DEVICES,...: each a preset on its devices, the batch --batch at the first point
// and growing with the devices (or --batch at every point: `fixed_batch`), the sequence --seq or the model's
// context.
std::vector<WeakScalingPoint> weak_scaling_points(std::string const& series, PlanRequest const& base, int seq,
                                                  bool fixed_batch) {
    std::vector<WeakScalingPoint> points;
    // getline passes over an empty last entry: a trailing comma is a mistake, not the end of the list.
    AXONN_REQUIRE(!series.ends_with(','), "--weak-scaling {} ends with ',': drop it, or add an entry such as "
                  "gpt-40b:1024", series);
    std::stringstream entries(series);
    for (std::string entry; std::getline(entries, entry, ',');) {
        auto const colon = entry.find(':');
        int devices = 0;
        bool const parsed = colon != std::string::npos &&
                            std::from_chars(entry.data() + colon + 1, entry.data() + entry.size(), devices).ptr ==
                                entry.data() + entry.size();
        AXONN_REQUIRE(parsed && devices > 0, "--weak-scaling entry '{}' is not MODEL:DEVICES (such as gpt-20b:512)",
                      entry);
        WeakScalingPoint point;
        point.label = entry.substr(0, colon);
        point.request = base;
        ModelConfig const model = model_preset(point.label);
        point.request.model = model;
        point.request.devices = devices;
        std::int64_t const scaled =
            points.empty() || fixed_batch
                ? base.batch
                : static_cast<std::int64_t>(base.batch) * devices / points.front().request.devices;
        // From the second point on: the first point names the devices a batch scales from.
        if (!points.empty() && !fixed_batch) {
            int const first_devices = points.front().request.devices;
            AXONN_REQUIRE(
                scaled * first_devices == static_cast<std::int64_t>(base.batch) * devices,
                "--weak-scaling: the batch {} for {} devices does not scale to a whole batch on {}: pick a batch "
                "divisible by the first point's devices",
                base.batch, first_devices, devices);
        }
        AXONN_REQUIRE(scaled <= (1 << 30), "--weak-scaling: the batch would grow to {} sequences on {} devices", scaled,
                      devices);
        point.request.batch = static_cast<int>(scaled);
        point.request.seq = seq > 0 ? seq : model.context();
        validate_plan_request(point.request);
        points.push_back(std::move(point));
    }
    AXONN_REQUIRE(points.size() >= 2, "--weak-scaling needs two points at least, such as gpt-20b:512,gpt-40b:1024");
    return points;
}

void print_weak_scaling(std::vector<WeakScalingPoint> const& points) {
    fmt::print("{:>8} {:<14} {:<24} {:>8} {:>9} {:>9} {:>12} {:>7} {:>11}\n", "devices", "model", "best grid", "batch",
               "time (s)", "exposed", "hw PFLOP/s", "hw %", "efficiency");
    for (WeakScalingPoint const& p : points) {
        if (!p.best) {
            fmt::print("{:>8} {:<14} no grid fits (run a single plan with --explain)\n", p.request.devices, p.label);
            continue;
        }
        fmt::print("{:>8} {:<14} {:<24} {:>8} {:>9.3f} {:>9.3f} {:>12.2f} {:>7.1f} {:>10.1f}%\n", p.request.devices,
                   p.label, p.best->grid.to_string(), p.request.batch, p.best->time.time_s,
                   p.best->time.exposed_comm_s, p.best->hardware_flops_per_s / 1e15, p.best->hardware_pct_peak,
                   100.0 * p.efficiency);
    }
    auto const first = std::find_if(points.begin(), points.end(), [](auto const& p) { return p.best.has_value(); });
    for (WeakScalingPoint const& p : points) {
        if (first == points.end()) break;
        if (auto const reason = super_linear_reason(*first, p)) fmt::print("super-linear: {}\n", *reason);
    }
}

void plot_weak_scaling(std::vector<WeakScalingPoint> const& points, std::string const& machine, bool fixed_batch,
                       std::filesystem::path const& png, ExistingDestination existing) {
    PlotSeries efficiency{"", {}, {}}, peak{"", {}, {}};
    for (WeakScalingPoint const& p : points) {
        efficiency.x.push_back(p.request.devices);
        efficiency.y.push_back(p.best ? 100.0 * p.efficiency : NAN);
        peak.x.push_back(p.request.devices);
        peak.y.push_back(p.best ? p.best->hardware_pct_peak : NAN);
    }
    PlotPanel const left{"weak-scaling efficiency", "devices", "% of the first point per device", {efficiency}, true,
                         0.0, std::nullopt};
    PlotPanel const right{"share of peak (hardware FLOPs)", "devices", "% of peak", {peak}, true, 0.0, std::nullopt};
    std::string const batch = fixed_batch ? fmt::format("a batch of {} sequences", points.front().request.batch)
                                          : "the batch growing with the devices";
    write_png(png, render_line_plots(fmt::format("axonn plan --weak-scaling on {}, {} (predicted)", machine, batch),
                                     {left, right}),
              existing);
}

}  // namespace

void add_plan_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("plan", "Rank every process grid for a model on a machine");
    command->footer(
        "Predicts, for every (data, z, y, x) grid of --gpus devices, the step time with communication overlapped,\n"
        "the communication left exposed per axis, the memory per device, and the share of peak; grids that do not\n"
        "divide the model or do not fit in memory are excluded (--explain says why). \"% peak\" and PFLOP/s count\n"
        "model FLOPs (6N + 6LCT per token); \"hw %\" counts hardware FLOPs as Megatron-LM and AxoNN do, the\n"
        "recomputed forward included: 96Bslh^2(1 + s/6h + V/16lh) with --recompute layer, 72Bslh^2(1 + s/6h +\n"
        "V/12lh) without. --json carries both. \"vocab\" is the vocabulary's layout on the grid (--vocab-split).\n"
        "Llama 3.1's presets (llama3.1-8b, llama3.1-70b, llama3.1-405b) plan too. --weak-scaling plans a series of\n"
        "models on growing device counts instead, each on its best grid, and plots its efficiency per device.\n"
        "Example: axonn plan --model gpt-20b --gpus 1024 --machine perlmutter --batch 512 --seq 2048\n"
        "         axonn plan --model llama3.1-405b --gpus 4096 --machine frontier --batch 1024 --seq 8192 \\\n"
        "             --recompute layer --precision bf16\n"
        "         axonn plan --weak-scaling gpt-20b:512,gpt-40b:1024,gpt-80b:2048 --batch 512 --machine frontier");
    auto request = std::make_shared<PlanRequest>();
    auto flags = std::make_shared<PlanFlags>();
    auto model = std::make_shared<ModelOptions>(*command, "gpt-20b");
    CLI::Option* gpus = command->add_option("--gpus", request->devices, "devices (GPUs, GCDs or CPU ranks), at most " +
                                                                            std::to_string(max_plan_devices));
    command->add_option("--machine", flags->machine, "machine profile: perlmutter, frontier, alps, local, or a .toml")
        ->capture_default_str();
    command->add_option("--batch", request->batch, "global batch, sequences")->required();
    command->add_option("--seq", flags->seq, "sequence length (default: the model's context)");
    add_grid_order_option(*command, flags->order);
    add_step_options(*command, flags->run);
    command->add_option("--top", flags->top, "rows of the table")->capture_default_str();
    command->add_flag("--json", flags->json, "print a JSON list, best first (with --explain: the excluded ones too)");
    command->add_flag("--explain", flags->explain, "also list the excluded grids and why");
    CLI::Option* weak = command->add_option(
        "--weak-scaling", flags->weak_scaling,
        "plan a series instead of one job: MODEL:DEVICES,... (such as gpt-20b:512,gpt-40b:1024), each on its best "
        "grid, the batch growing with the devices from --batch (or fixed: --weak-scaling-batch); prints the "
        "efficiency per device against the first point and writes --plot");
    weak->excludes(gpus);
    command->add_option("--weak-scaling-batch", flags->weak_batch,
                        "with --weak-scaling: per-device, the batch grows with the devices (each point as many "
                        "sequences per device as the first); fixed, every point trains --batch sequences (AxoNN's "
                        "example launch scripts keep 2,048 from 5B to 40B models)")
        ->check(CLI::IsMember({"per-device", "fixed"}))
        ->needs(weak)
        ->capture_default_str();
    command->add_option("--plot", flags->plot, "with --weak-scaling: the PNG to write")
        ->needs(weak)
        ->capture_default_str();
    command->add_flag("--overwrite", flags->overwrite, "with --weak-scaling: replace an existing --plot file")
        ->needs(weak);
    command
        ->add_option("--vocab", flags->vocab,
                     "vocabulary size (0: the preset's, such as GPT-2's 50,257): the tokenizer's, for a job that "
                     "trains with another")
        ->excludes(weak)
        ->capture_default_str();

    command->callback([command, request, flags, model, gpus] {
        require_one_process("plan");  // it runs no grid: several ranks would each print the same plan
        if (!flags->weak_scaling.empty()) {
            std::vector<WeakScalingPoint> points = as_usage_errors([&] {
                AXONN_REQUIRE(flags->seq >= 0, "--seq must not be negative, got {} (0: the model's context)",
                              flags->seq);
                request->time.order = parse_axis_order(flags->order);
                request->run = flags->run.model;
                request->micro_batch = flags->run.micro_batch;
                request->devices = 1;  // each point sets its own
                return weak_scaling_points(flags->weak_scaling, *request, flags->seq,
                                           flags->weak_batch == "fixed");
            });
            // Before the planning, not after it; never the profile it plans on.
            require_existing_folder(flags->plot, "--plot");
            require_apart_from_models_and_data(flags->plot, "--plot");  // no file in a checkpoint suggested
            require_not_a_folder(flags->plot, "--plot", "weak-scaling.png");
            std::filesystem::path const profile = as_usage_errors([&] { return machine_profile_path(flags->machine); });
            require_apart_from_config_files(flags->plot, "--plot", *command);
            require_output_file(flags->plot, "--plot", "plot", flags->overwrite, {profile});
            MachineProfile const machine = load_machine_profile(profile.string());
            for (WeakScalingPoint& point : points) point.request.machine = machine;
            plan_weak_scaling(points);
            if (flags->json) {
                nlohmann::json list = nlohmann::json::array();
                for (WeakScalingPoint const& p : points) {
                    nlohmann::json record = {{"model", p.label}, {"devices", p.request.devices},
                                             {"batch", p.request.batch}, {"seq", p.request.seq},
                                             {"efficiency", p.efficiency}};
                    if (p.best) record["best"] = candidate_json(*p.best);
                    list.push_back(record);
                }
                fmt::print("{}\n", list.dump());
            } else {
                fmt::print("weak scaling on {} ({}), communication {}:\n", machine.name, machine.description,
                           request->run.overlap ? "overlapped" : "not overlapped");
                print_weak_scaling(points);
            }
            plot_weak_scaling(points, machine.name, flags->weak_batch == "fixed", flags->plot,
                              replaced_only_if(flags->overwrite));
            if (!flags->json) fmt::print("wrote {}\n", flags->plot.string());
            return;
        }
        std::filesystem::path const machine = as_usage_errors([&] {
            AXONN_REQUIRE(gpus->count() > 0, "--gpus is required (or --weak-scaling MODEL:DEVICES,...)");
            ModelConfig resolved = model->resolve_model();
            AXONN_REQUIRE(flags->vocab >= 0, "--vocab must not be negative, got {} (0: the preset's)", flags->vocab);
            if (flags->vocab > 0) {
                resolved.set_vocab_size(flags->vocab);
                resolved.validate();
            }
            request->model = resolved;
            request->seq = flags->seq > 0 ? flags->seq : resolved.context();
            AXONN_REQUIRE(flags->seq >= 0, "--seq must not be negative, got {} (0: the model's context)", flags->seq);
            AXONN_REQUIRE(flags->top >= 1, "--top must be at least 1, got {}", flags->top);
            request->time.order = parse_axis_order(flags->order);
            request->run = flags->run.model;
            request->micro_batch = flags->run.micro_batch;
            validate_plan_request(*request);
            return machine_profile_path(flags->machine);
        });
        request->machine = load_machine_profile(machine.string());
        std::vector<PlanCandidate> const candidates = plan_grids(*request);
        bool const fits = std::ranges::any_of(candidates, [](PlanCandidate const& c) { return !c.excluded; });
        if (flags->json) {
            nlohmann::json list = nlohmann::json::array();
            for (auto const& c : candidates) {
                if (!c.excluded || flags->explain) list.push_back(candidate_json(c));
            }
            fmt::print("{}\n", list.dump());
        }
        // A plan with no grid is no plan: a script must not take it for one, --json's empty list neither
        // (--explain asks for the exclusions).
        AXONN_REQUIRE(fits || flags->explain,
                      "no grid of {} devices fits {} at batch {} x {} tokens: run with --explain to see why each was "
                      "excluded (memory, a size that does not divide)",
                      request->devices, model->preset(), request->batch, request->seq);
        // --explain shows why every grid was excluded, and then still fails: a plan with no grid is no plan.
        auto const require_a_fit = [&] {
            AXONN_REQUIRE(fits, "no grid of {} devices fits {} at batch {} x {} tokens: each grid's exclusion is "
                          "listed above", request->devices, model->preset(), request->batch, request->seq);
        };
        if (flags->json) return require_a_fit();
        Architecture const planned = request->model.architecture();
        fmt::print("{} ({:.1f} B parameters) on {} x {} ({}), batch {} x {} tokens{}:\n", model->preset(),
                   planned.parameter_count() / 1e9, request->devices, request->machine.name,
                   request->machine.description, request->batch, request->seq,
                   request->run.overlap ? ", communication overlapped" : ", no overlap");
        print_table(candidates, flags->top);
        if (!flags->explain) return;
        for (auto const& c : candidates) {
            if (c.excluded) fmt::print("excluded {:<24} {}\n", c.grid.to_string(), *c.excluded);
        }
        require_a_fit();
    });
}

}  // namespace axonn
