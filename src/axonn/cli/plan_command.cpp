#include "axonn/cli/commands.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/step_options.h"
#include "axonn/core/error.h"
#include "axonn/model/llama/llama_parameters.h"
#include "axonn/perf/planner.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
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
};

nlohmann::json candidate_json(PlanCandidate const& candidate) {
    nlohmann::json exposed;
    for (auto const& [group, seconds] : candidate.time.exposed_by_group) exposed[group_name(group)] = seconds;
    GridShape const& g = candidate.grid;
    nlohmann::json record = {{"grid", {{"data", g.data}, {"z", g.z}, {"y", g.y}, {"x", g.x}}},
                             {"time_s", candidate.time.time_s},
                             {"exposed_comm_s", candidate.time.exposed_comm_s},
                             {"exposed_comm_by_axis_s", exposed},
                             {"comm_s", candidate.time.comm_s},
                             {"compute_s", candidate.time.gemm_s + candidate.time.other_compute_s},
                             {"memory_bytes", candidate.memory.total()},
                             {"flops_per_s", candidate.flops_per_s},
                             {"pct_peak", candidate.pct_peak},
                             {"hardware_flops_per_s", candidate.hardware_flops_per_s},
                             {"hardware_pct_peak", candidate.hardware_pct_peak},
                             {"largest_call_bytes", candidate.time.largest_call_bytes},
                             {"split_collectives", candidate.split_collectives}};
    if (candidate.excluded) record["excluded"] = *candidate.excluded;
    return record;
}

void print_table(std::vector<PlanCandidate> const& candidates, int top) {
    fmt::print("{:<4} {:<24} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>11} {:>7}\n", "rank", "grid",
               "time (s)", "exposed", "data", "z", "y", "x", "mem (GiB)", "% peak", "PFLOP/s", "hw %");
    int shown = 0;
    for (auto const& c : candidates) {
        if (c.excluded || shown == top) break;
        auto exposed = [&c](Group g) {
            auto const it = c.time.exposed_by_group.find(g);
            return it == c.time.exposed_by_group.end() ? 0.0 : it->second;
        };
        fmt::print("{:<4} {:<24} {:>10.3f} {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.1f} {:>7.1f} {:>11.2f} "
                   "{:>7.1f}\n",
                   ++shown, c.grid.to_string() + (c.split_collectives ? "*" : ""), c.time.time_s, c.time.exposed_comm_s, exposed(Group::data),
                   exposed(Group::z), exposed(Group::y), exposed(Group::x), c.memory.total() / 1073741824.0,
                   c.pct_peak, c.flops_per_s / 1e15, c.hardware_pct_peak);
    }
    if (shown == 0) fmt::print("no grid fits: run with --explain to see why each was excluded\n");
    bool const any_split = std::any_of(candidates.begin(), candidates.begin() + shown,
                                       [](PlanCandidate const& c) { return c.split_collectives; });
    if (any_split) {
        fmt::print("* a collective of this grid moves more than 2^31 - 1 elements per rank: it runs as several MPI "
                   "calls\n");
    }
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
        "V/12lh) without. --json carries both.\n"
        "Llama 3.1's presets (llama3.1-8b, llama3.1-70b, llama3.1-405b) plan too.\n"
        "Example: axonn plan --model gpt-20b --gpus 1024 --machine perlmutter --batch 512 --seq 2048\n"
        "         axonn plan --model llama3.1-405b --gpus 4096 --machine frontier --batch 1024 --seq 8192 \\\n"
        "             --recompute layer --precision bf16");
    auto request = std::make_shared<PlanRequest>();
    auto flags = std::make_shared<PlanFlags>();
    auto model = std::make_shared<ModelOptions>(*command, "gpt-20b", true);
    command->add_option("--gpus", request->devices,
                        "devices (GPUs, GCDs or CPU ranks), at most " + std::to_string(max_plan_devices))->required();
    command->add_option("--machine", flags->machine, "machine profile: perlmutter, frontier, alps, local, or a .toml")
        ->capture_default_str();
    command->add_option("--batch", request->batch, "global batch, sequences")->required();
    command->add_option("--seq", flags->seq, "sequence length (default: the model's context)");
    command->add_option("--grid-order", flags->order, "rank order of the axes, fastest first")->capture_default_str();
    add_step_options(*command, flags->run);
    command->add_option("--top", flags->top, "rows of the table")->capture_default_str();
    command->add_flag("--json", flags->json, "print a JSON list, best first (with --explain: the excluded ones too)");
    command->add_flag("--explain", flags->explain, "also list the excluded grids and why");

    command->callback([request, flags, model] {
        std::filesystem::path const machine = as_usage_errors([&] {
            if (model->names_llama()) {
                request->architecture = llama_architecture(model->resolve_llama());
            } else {
                request->model = model->resolve();
            }
            int const context = request->architecture ? request->architecture->context : request->model.max_seq;
            request->seq = flags->seq > 0 ? flags->seq : context;
            require(flags->seq >= 0, "--seq must not be negative, got {} (0: the model's context)", flags->seq);
            require(flags->top >= 1, "--top must be at least 1, got {}", flags->top);
            request->time.order = parse_axis_order(flags->order);
            request->run = flags->run.model;
            request->micro_batch = flags->run.micro_batch;
            validate_plan_request(*request);
            return machine_profile_path(flags->machine);
        });
        request->machine = load_machine_profile(machine.string());
        std::vector<PlanCandidate> const candidates = plan_grids(*request);
        if (flags->json) {
            nlohmann::json list = nlohmann::json::array();
            for (auto const& c : candidates) {
                if (!c.excluded || flags->explain) list.push_back(candidate_json(c));
            }
            fmt::print("{}\n", list.dump());
            return;
        }
        Architecture const planned = request->architecture ? *request->architecture : gpt2_architecture(request->model);
        fmt::print("{} ({:.1f} B parameters) on {} x {} ({}), batch {} x {} tokens{}:\n", model->preset(),
                   planned.parameter_count() / 1e9, request->devices, request->machine.name,
                   request->machine.description, request->batch, request->seq,
                   request->run.overlap ? ", communication overlapped" : ", no overlap");
        print_table(candidates, flags->top);
        if (!flags->explain) return;
        for (auto const& c : candidates) {
            if (c.excluded) fmt::print("excluded {:<24} {}\n", c.grid.to_string(), *c.excluded);
        }
    });
}

}  // namespace axonn
