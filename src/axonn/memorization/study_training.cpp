#include "axonn/memorization/study_training.h"

#include "axonn/core/error.h"
#include "axonn/train/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace axonn {
namespace {

// Global batch `first_slot` ... `first_slot + rows − 1` of `sequence`, as inputs and targets of `seq` tokens each.
void fill_batch(int rows, int seq, std::int64_t first_slot, SequenceSource const& sequence,
                std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets) {
    std::vector<std::int32_t> window(static_cast<std::size_t>(seq) + 1);
    for (int b = 0; b < rows; ++b) {
        sequence(first_slot + b, std::span<std::int32_t>(window));
        std::copy_n(window.begin(), seq, tokens.begin() + static_cast<std::ptrdiff_t>(b) * seq);
        std::copy_n(window.begin() + 1, seq, targets.begin() + static_cast<std::ptrdiff_t>(b) * seq);
    }
}

}  // namespace

StudyModel new_study_model(ModelConfig const& config, Backend& backend, ProcessGrid& grid, int batch, int seq,
                           std::uint64_t seed, std::span<float const> start) {
    StudyModel trained;
    trained.model = std::make_unique<Decoder>(config, backend, grid, batch / grid.shape().batch_replicas(), seq);
    trained.model->init_weights(seed);
    if (!start.empty()) std::copy(start.begin(), start.end(), trained.model->params().begin());
    trained.optimizer = std::make_unique<AdamW>(trained.model->segments(), trained.model->layout().total(), backend,
                                                AdamWConfig{});
    return trained;
}

StudyTraining train_study_model(StudyModel& trained, ProcessGrid& grid, StudyTrainingRun const& run,
                                LrSchedule const& schedule, GoldfishOptions const& mask,
                                SequenceSource const& sequence) {
    int const B = run.batch, T = run.seq;
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * T), targets(tokens.size());
    std::vector<float> keep(tokens.size());
    Progress progress(run.label, run.steps, grid.rank() == 0 && run.show_progress ? stderr : nullptr);
    int const averaged = std::max(1, run.steps / 10);
    MaskedLosses sums{0, 0, 0};
    int dropped_steps = 0;
    std::int64_t supervised = 0;
    for (int step = 0; step < run.steps; ++step) {
        fill_batch(B, T, run.first_slot + std::int64_t{step} * B, sequence, tokens, targets);
        goldfish_mask(mask, targets, T, run.first_step + step, keep);
        supervised += std::count_if(keep.begin(), keep.end(), [](float k) { return k != 0.0f; });
        Batch const rows = replica_rows(grid, B, T, tokens.data(), targets.data(), keep.data());
        StepResult const result = train_step(*trained.model, *trained.optimizer, rows, schedule.at(run.first_step + step));
        AXONN_REQUIRE(result.updated,
                      "{}: the loss became {} at step {}; the learning rate is too high for this model: "
                      "lower --lr",
                      run.label, result.loss, run.first_step + step);
        if (step >= run.steps - averaged) {
            sums.all_targets += result.masked->all_targets;
            sums.kept_targets += result.masked->kept_targets;
            if (std::isfinite(result.masked->dropped_targets)) {
                sums.dropped_targets += result.masked->dropped_targets;
                ++dropped_steps;
            }
        }
        progress.update(step + 1, fmt::format("loss {:.3f}", result.loss));
    }
    progress.finish();
    MaskedLosses const means{sums.all_targets / averaged, sums.kept_targets / averaged,
                             dropped_steps > 0 ? sums.dropped_targets / dropped_steps : std::nan("")};
    return {means, supervised};
}

double mean_study_loss(Decoder& model, ProcessGrid& grid, int seq, int sequences, SequenceSource const& sequence) {
    int const B = model.max_batch() * grid.shape().batch_replicas(), batches = std::max(1, sequences / B);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * seq), targets(tokens.size());
    double sum = 0;
    for (int i = 0; i < batches; ++i) {
        fill_batch(B, seq, std::int64_t{i} * B, sequence, tokens, targets);
        sum += model.forward(replica_rows(grid, B, seq, tokens.data(), targets.data()));
    }
    return sum / batches;
}

}  // namespace axonn
