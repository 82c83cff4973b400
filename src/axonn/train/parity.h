// `axonn parity`: the same training run serially and on a process grid, from the same seed and batches, and the
// largest relative differences between the two. The grid may run with micro-batches, recomputation or overlap
// off (ParityOptions::run). World rank 0 also runs the serial model (MPI_COMM_SELF) and shares its results, so
// the comparison needs no extra process and works for any grid; the other ranks wait for its results.
//
// Differences are relative and norm-wise: |a − b| / |b| for scalars, ‖a − b‖ / ‖b‖ for tensors, with b serial.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/model_config.h"
#include "axonn/train/goldfish.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/schedule.h"
#include "axonn/train/train_step.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

struct ParityOptions {
    ModelConfig model;  // any family
    GridShape grid;
    std::string grid_order = "x,y,z,data";
    int steps = 1;
    int batch = 8;
    int seq = 16;
    std::uint64_t seed = 1234;
    LrSchedule schedule{1e-3f, 1e-4f, 2, 1};
    AdamWConfig optimizer;
    bool debug_collectives = false;
    StepOptions run;  // how the grid runs (the serial model runs one pass, overlapped, without recomputation)
    GoldfishOptions goldfish;  // both runs train on the Goldfish loss, each computing the mask from its targets
};

struct ParityReport {
    std::vector<double> loss_rel_diff;       // per step
    std::vector<double> grad_norm_rel_diff;  // per step
    // With the Goldfish loss, per step: the largest of the all-, kept- and dropped-target losses' differences,
    // and whether the grid's masks (computed from its ranks' own rows) equal the serial mask.
    std::vector<double> masked_loss_rel_diff;
    bool masks_equal = true;
    // First step, this rank's slice against the serial logits (max over ranks); where the grid's LM head ran in
    // chunks (--logit-rows) and kept no logits, each token's loss against serial's instead.
    double logits_rel_diff = 0;
    bool logits_in_chunks = false;
    double init_max_abs_diff = 0;            // gathered initial weights against the serial ones (0: bit-identical)
    std::map<std::string, double> grad_rel_diff;  // per parameter tensor, after the last step's backward
    DType precision = DType::f32;                 // the GEMMs'
    double max_rel_diff() const;
};

// Collective over MPI_COMM_WORLD; every rank returns the same report.
ParityReport run_parity(ParityOptions options);

}  // namespace axonn
