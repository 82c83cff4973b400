// When a training run saves: every --ckpt-every steps, at the end, and when the cluster's scheduler signals (then
// it stops: stop_signals.h). Only a run with a --ckpt-dir saves or catches the signals. It never saves one step
// twice: a run resumed from a checkpoint in --ckpt-dir, or stopped right after a save, reuses that folder.
// With --ckpt-async the --ckpt-every saves are written in the background (background_save.h); at most one is in
// flight (the next waits for it).
// The final save and a save on a signal wait for the one in flight, and are written before the run exits.
#pragma once

#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/comm/grid.h"
#include "axonn/model/decoder.h"
#include "axonn/train/background_save.h"
#include "axonn/train/training_data.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/stop_signals.h"
#include "axonn/train/trainer.h"

#include <filesystem>
#include <optional>
#include <string>

namespace axonn {

// Thrown on every rank alike by stop_if_asked when a failure the ranks agreed on ends the run after its save: an
// error (exit status 1) whose message names the checkpoint. Every rank is there, so the trace can still be written.
class EndedAfterSave : public Error {
public:
    explicit EndedAfterSave(std::string const& message) : Error(message) {}
};

class CheckpointPolicy {
public:
    // resumed: the checkpoint the run resumed from at start_step, if any.
    CheckpointPolicy(TrainOptions const& options, Decoder& model, AdamW& optimizer, TrainingData const& data,
                     std::optional<CheckpointReader> const& resumed, int start_step, bool leader);

    // Before step `step`: notes a background save that has been written, then stops if asked (stop_if_asked).
    // Collective over the world.
    void before_step(int step, std::string const& output_failure);
    // Stops the run at `step` when any rank has received a stop signal (where `on_signal`), or rank 0 could not
    // write the run's metrics (`output_failure`: that error on rank 0, empty on the others): saves the run (unless
    // that step is saved already), then throws StoppedBySignal, or for the failure EndedAfterSave, on every rank
    // (the failure ended the run at once, losing the steps since its last save). Collective over the world.
    void stop_if_asked(int step, std::string const& output_failure, bool on_signal = true);
    // After the update that completed `done` steps: saves when --ckpt-every says so (never the last step's: the
    // end saves it).
    void after_step(int done);
    // At the end of the run: saves its last step, unless saved.
    void at_end();

private:
    std::filesystem::path save(int step);
    void start_background_save(int step);
    // Waits for the background save in flight, if any, and completes it.
    void complete_background_save();

    TrainOptions const& options_;
    Decoder& model_;
    AdamW& optimizer_;
    TrainingData const& data_;
    bool leader_;
    std::optional<StopSignals> stop_signals_;
    std::optional<BackgroundSave> in_flight_;
    int last_saved_;  // the step of the newest checkpoint in --ckpt-dir; -1 before any
};

}  // namespace axonn
