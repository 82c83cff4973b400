// What both memorization experiments (study.h, extreme_study.h) do with a model: build it on the job's grid, train
// it for a number of steps on sequences that a function supplies, under a learning-rate schedule and a Goldfish
// mask, and measure its mean loss on fixed sequences.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/kernels/backend.h"
#include "axonn/model/decoder.h"
#include "axonn/model/model_config.h"
#include "axonn/train/goldfish.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/schedule.h"
#include "axonn/train/train_step.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace axonn {

// A model on the job's grid with its optimizer (AdamW's defaults: β 0.9/0.95, weight decay 0.1, clipping at 1).
struct StudyModel {
    std::unique_ptr<Decoder> model;
    std::unique_ptr<AdamW> optimizer;
};

// A fresh model from `seed`, or holding `start` (another model's weights on this grid) when given. Its rows per
// forward are batch / the grid's batch replicas.
StudyModel new_study_model(ModelConfig const& config, Backend& backend, ProcessGrid& grid, int batch, int seq,
                           std::uint64_t seed, std::span<float const> start = {});

// Writes the training sequence of `slot` (seq + 1 tokens: the inputs, then the last target) into `window`.
using SequenceSource = std::function<void(std::int64_t slot, std::span<std::int32_t> window)>;

struct StudyTraining {
    MaskedLosses losses;            // the means over the last tenth of the steps (dropped: over steps that dropped any)
    std::int64_t supervised_targets;  // the targets the mask kept, summed over every step and row
};

struct StudyTrainingRun {
    int batch;               // sequences per step, over the whole grid
    int seq;
    int steps;
    std::int64_t first_slot;  // step s trains on slots first_slot + s·batch ...
    std::string label;       // on the progress bar and in errors
    bool show_progress = true;
    int first_step = 0;       // the schedule's step of this run's first step (a run continued in parts)
};

// Trains `run.steps` steps on global batches of `sequence`'s slots, under the schedule and the mask. Collective.
StudyTraining train_study_model(StudyModel& trained, ProcessGrid& grid, StudyTrainingRun const& run,
                                LrSchedule const& schedule, GoldfishOptions const& mask,
                                SequenceSource const& sequence);

// The mean teacher-forced loss over `sequences` sequences from `sequence` (slots 0 ...), in global batches of the
// model's rows × the grid's batch replicas. Collective.
double mean_study_loss(Decoder& model, ProcessGrid& grid, int seq, int sequences, SequenceSource const& sequence);

}  // namespace axonn
