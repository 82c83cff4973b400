// A training run's data: the loaders of --data and of the validation shards (checked to be apart and from one
// run of `axonn prepare`), the buffers of one global batch, and this rank's passes of it.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/decoder.h"
#include "axonn/train/data_loader.h"
#include "axonn/train/trainer.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <optional>
#include <span>
#include <vector>

namespace axonn {

// A global batch's tokens, targets and, for data with a loss mask, the mask of each target (else empty).
struct BatchBuffers {
    std::vector<std::int32_t> tokens, targets;
    std::vector<float> loss_mask;

    BatchBuffers(TrainOptions const& options, bool masked)
        : tokens(static_cast<std::size_t>(options.batch) * options.seq), targets(tokens.size()),
          loss_mask(masked ? tokens.size() : 0) {}
    float* mask() { return loss_mask.empty() ? nullptr : loss_mask.data(); }
};

struct TrainingData {
    // --data DIR with train.bin in it trains on train.bin (`training_note` names the folder's other shards, left
    // out) and validates on val.bin; any other path trains on all
    // its shards (never a folder's val.bin) and validates on --val-data, or on the folder's val.bin. A val.bin
    // taken by default that holds less than one batch, with --eval-batches defaulted too, leaves the run without
    // validation (`no_validation_note` says why) rather than refusing it.
    TrainingData(TrainOptions const& options, ShardTokenizer const& tokenizer);

    // Every file the run reads, which no output may overwrite.
    std::vector<std::filesystem::path> inputs() const;

    std::string training_note;  // a folder's shards left out of `train` (beside its train.bin), for the banner
    DataLoader train;
    std::string no_validation_note;  // without `val`: why, for the banner (before `val`, which sets it)
    std::optional<DataLoader> val;
    BatchBuffers batch;
    std::optional<BatchBuffers> val_batch;
    int eval_batches = 0;  // validation batches per evaluation: --eval-batches, or its default fitted to `val`
    // The weights of the step's targets: the Goldfish mask, the data's, or both multiplied; empty with neither.
    std::vector<float> loss_mask;
};

// This rank's passes of a global batch (its replica's rows, in micro-batches).
std::vector<Batch> local_passes(ProcessGrid const& grid, TrainOptions const& options, BatchBuffers const& batch,
                                float const* loss_mask);

// The step's loss weights: the data's loss mask (0 on the prompt tokens of fine-tuning records) times the Goldfish
// mask, which `loss_mask` holds (computed from the real targets). With Goldfish, prompt targets also become
// ignored (-1), which the model weighs 0 as the mask does: the Goldfish split losses, which count every target not
// ignored, then stay over the responses.
void apply_data_mask(BatchBuffers& batch, std::span<float> loss_mask, bool goldfish);

}  // namespace axonn
