// `axonn bench`: training-step throughput measured the way the AxoNN papers do it: run 10 iterations and
// average the last 8 (the first steps touch fresh memory and are 2-8× slower). On a grid every rank times its
// steps and each step counts its slowest rank's time (a collective over MPI_COMM_WORLD after the timed steps).
// Every timed step records its kernels' spans, from which rank 0's breakdown of a step is summed
// (train/step_breakdown.h); --trace writes those same spans. On a GPU, where a recorded span waits for its kernels,
// the timed steps run unrecorded and as many steps after them are recorded for the breakdown.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/families/registry.h"
#include "axonn/model/model_config.h"
#include "axonn/train/step_breakdown.h"
#include "axonn/train/train_step.h"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace axonn {

struct BenchOptions {
    ModelConfig model = model_preset("gpt2-small");  // any family
    int batch = 4;
    int seq = 64;
    int iterations = 10;
    int warmup = 2;  // iterations left out of the average
    int threads = 1;
    GridShape grid;  // data × z × y × x over the MPI ranks; batch is the global batch
    std::string grid_order = "x,y,z,data";
    StepOptions run;
    std::filesystem::path trace;  // a Chrome trace of every rank's timed iterations; empty = none
    bool overwrite = false;       // replace an existing trace file
};

struct BenchResult {
    DType precision;  // the GEMMs' input type the steps ran in (f32 where bf16 fell back)
    VocabSplit vocab_split;  // the vocabulary's layout the steps ran with (--vocab-split auto resolved)
    double step_s;          // the mean timed step; each step counts its slowest rank's time
    double fastest_step_s;  // the spread of the timed steps (a shared machine's speed drifts)
    double slowest_step_s;
    double tokens_per_s;
    double model_flops_per_s;
    double mfu;
    double gemm_flops_per_s;  // measured GEMM rate in that precision (best of before and after the steps): a core's
                              // × threads × ranks on CPUs, a GPU's × ranks
    double comm_s;            // per timed step, rank 0: the time its collectives were in flight
    double comm_exposed_s;    // per timed step, rank 0: the part of it rank 0 waited for
    double comm_hidden_fraction;  // 1 − exposed / in flight
    std::int64_t peak_rss_bytes;      // of this process
    std::int64_t tensor_peak_bytes;   // the most axonn's tensors held (what the memory model predicts)
    std::vector<GemmTuningReport> gemm_tunings;  // the GEMM shapes timed more than one way, and the choice
    StepBreakdown breakdown;  // rank 0's recorded steps: where their time went (from their traced spans)
    bool breakdown_steps_apart;  // the recorded steps ran after the timed ones (a device backend's)
};

BenchResult run_benchmark(BenchOptions options);

}  // namespace axonn
