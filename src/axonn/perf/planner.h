// The planner: every (data, z, y, x) grid of a device count, each with its predicted step time, exposed
// communication, memory and efficiency; grids that cannot run (shapes that do not divide, or more memory than a
// device has) are kept with the reason, for `axonn plan --explain`. AxoNN's own planner ranks by traffic alone
// and leaves the choice to trial runs; this one ranks by predicted iteration time with overlap and memory.
#pragma once

#include "axonn/model/model_config.h"
#include "axonn/perf/memory_model.h"
#include "axonn/perf/time_model.h"

#include <optional>
#include <string>
#include <vector>

namespace axonn {

struct PlanRequest {
    ModelConfig model;    // any family
    int devices = 1;
    int batch = 1;        // global, sequences
    int seq = 1024;
    int micro_batch = 0;  // per replica and pass; 0 = the whole replica batch at once
    DecoderOptions run;   // overlap, recomputation, weight caching, precision: as the trainer will run
    MachineProfile machine;
    TimeOptions time;
};

struct PlanCandidate {
    GridShape grid;
    VocabSplit vocab_split = VocabSplit::xy;  // the vocabulary's layout on this grid (--vocab-split auto resolved)
    TimePrediction time;
    MemoryPrediction memory;
    double flops_per_s = 0;  // model FLOPs (6·N + 6·L·C·T per token) of the whole job per second
    double pct_peak = 0;     // of all devices' peak in the chosen precision
    // Hardware FLOPs (Megatron-LM's and AxoNN's convention, recomputation counted: Architecture::
    // hardware_flops_per_step) of the whole job per second, and their share of the peak.
    double hardware_flops_per_s = 0;
    double hardware_pct_peak = 0;
    // Whether one of its collectives moves more elements per rank than one MPI call takes (2^31 − 1): the comm
    // layer then splits it into several calls (comm/communicator.h), which the model prices as one.
    bool split_collectives = false;
    std::optional<std::string> excluded;  // why it cannot run
};

// The most devices a plan covers: past a million the ordered factorisations of a highly composite count (125,440
// grids for 997,920) would take the planner past seconds and a gigabyte.
inline constexpr int max_plan_devices = 1 << 20;

// The request's numbers: devices in 1..max_plan_devices, a positive batch, a sequence within the context, a
// micro-batch not negative. plan_grids calls it; a problem is an axonn::Error naming the flag.
void validate_plan_request(PlanRequest const& request);

// Feasible grids first, fastest first; then the excluded ones.
std::vector<PlanCandidate> plan_grids(PlanRequest const& request);

}  // namespace axonn
