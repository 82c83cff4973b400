// What a training run tells its user besides the progress bar: the banner of the model, the grid, the backend,
// the data and the checkpoints before the first step (rank 0), and at the end what each axis of the grid
// communicated in the training steps.
#pragma once

#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/comm/grid.h"
#include "axonn/comm/node_placement.h"
#include "axonn/io/tokenizer.h"
#include "axonn/kernels/backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/training_data.h"
#include "axonn/train/trainer.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

// What the banner shows of a run that its options do not say.
struct BannerFacts {
    Decoder const& model;
    ProcessGrid& grid;
    NodePlacement const& placement;
    Backend const& backend;
    GemmRateMeasurement gemm_rate;
    TrainingData const& data;
    Tokenizer const& tokenizer;
    std::optional<CheckpointReader> const& resumed;
    int start_step;
    double restore_seconds;
};

// Prints the banner on stdout (call it on rank 0 only).
void print_training_banner(TrainOptions const& options, BannerFacts const& facts);

// What a run's training steps communicated, per axis: bytes, time in flight and time waited.
class AxisTraffic {
public:
    // One step's collectives.
    void add(std::vector<CollectiveRecord> const& calls);
    // "\n  x   1.2 MiB, in flight ..." for each axis that moved bytes on `grid`.
    std::string summary(ProcessGrid& grid) const;

private:
    std::map<Group, CommunicationTime> time_;
};

}  // namespace axonn
