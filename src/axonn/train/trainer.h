// `axonn train`: the training loop with validation, metrics, progress and a closing sample, on one process or
// on a 4D grid of MPI ranks. Rank 0 prints and writes the metrics; every rank trains its shard. A loss or gradient
// norm that stops being finite ends the run with an error, before it changes any weight.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/families/registry.h"
#include "axonn/model/generate.h"
#include "axonn/model/model_config.h"
#include "axonn/train/goldfish.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/run_lineage.h"
#include "axonn/train/schedule.h"
#include "axonn/train/train_step.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct TrainOptions {
    ModelConfig model = model_preset("gpt2-tiny");  // any family
    std::string tokenizer = "gpt2";       // decides the vocabulary and decodes the sample
    std::filesystem::path tokenizer_dir;  // GPT-2's encoder.json + vocab.bpe
    std::filesystem::path data;           // train.bin (+ val.bin) folder, a shard, or a folder of shards
    std::filesystem::path val_data;       // optional; default: val.bin beside the training data
    int steps = 100;
    int batch = 4;
    int seq = 64;
    LrSchedule schedule;                  // total_steps is set from steps
    AdamWConfig optimizer;
    std::uint64_t seed = 1337;
    int threads = 1;
    double gemm_rate_gflops = 0;          // MFU's denominator per core (or GPU) if given; 0: measured at start
    GridShape grid;                       // data × z × y × x; its product must be the number of MPI ranks
    bool grid_auto = false;               // the grid `axonn tune` measured for this job, else the planner's choice
    std::string grid_source;              // where the grid came from, for the banner (a grid file); empty: --grid
    std::string grid_order = "x,y,z,data";  // fastest-varying axis first
    bool debug_collectives = false;
    StepOptions run;                      // overlap, micro-batches, recomputation, weight caching
    GoldfishOptions goldfish;             // the Goldfish loss (off unless k is set); validation is never masked
    int eval_every = 50;                  // validation at step 0, every eval_every steps, and at the end
    int eval_batches = 0;  // validation batches per evaluation; 0: up to 8, as many as the validation data holds
    std::filesystem::path metrics;        // JSON lines; empty = none
    std::filesystem::path trace;          // Chrome trace of every rank's first trace_steps steps; empty = none
    int trace_steps = 5;
    bool overwrite = false;               // replace an existing metrics file instead of refusing it
    SampleOptions sample;                 // new_tokens = 0 skips the sample
    std::string prompt = "\n";
    bool prompt_given = false;            // --prompt was given (said to be unused where no sample is drawn)
    std::filesystem::path ckpt_dir;       // checkpoints go here; empty = none kept
    int ckpt_every = 0;                   // also every N steps (0: only at the end and on a stop signal)
    int keep = 0;                         // complete checkpoints kept in ckpt_dir; 0 = all
    bool ckpt_async = false;              // write the --ckpt-every saves while training goes on
    std::int64_t ckpt_file_mib = 2048;    // the largest safetensors file a rank writes (signed: -1 is shown as -1)
    std::string resume;                   // "latest", a checkpoint folder or a folder of them; empty = a new run
    bool new_data = false;                // resume on data other than the checkpoint's, from its start
    bool model_preset_given = false;      // --model was given (checked against --init-from's model)
    ShapeOverrides model_overrides;       // the shape options given (each checked against --init-from's model)
    std::filesystem::path init_from;      // weights to start from: an axonn checkpoint or a Hugging Face folder
    std::vector<std::filesystem::path> read_files;  // the config files and the grid file: no output may be one
    std::string run_id;  // not an option: the run's identity (run_identity), in its checkpoints and metrics records
    RunLineage lineage;  // not an option: the launches of the run's steps, this launch last (run_lineage)
};

struct TrainSummary {
    float first_val_loss;
    float last_val_loss;
    float last_train_loss;
    std::string sample;
};

// Everything that can be checked from the options alone; a problem is an axonn::UsageError. run_training calls it.
void validate_train_options(TrainOptions const& options);

TrainSummary run_training(TrainOptions options);

}  // namespace axonn
