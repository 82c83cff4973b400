#include "axonn/train/checkpoint_policy.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/comm/rank_zero.h"
#include "axonn/core/error.h"
#include "axonn/core/timer.h"
#include "axonn/train/checkpointing.h"

#include <fmt/format.h>

#include <array>
#include <csignal>
#include <new>
#include <system_error>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// The resumed checkpoint's step, if it lies in --ckpt-dir; else -1.
int saved_step(TrainOptions const& options, std::optional<CheckpointReader> const& resumed, int start_step) {
    std::error_code error;
    bool const here =
        resumed && fs::equivalent(resumed->folder(), options.ckpt_dir / checkpoint_folder_name(start_step), error);
    return here ? start_step : -1;
}

// A save needs host memory of its own beside the run's (its copies of the state): out of memory there was
// reported as the run's ("choose a smaller model, batch or sequence"), which had fitted. A save that fails (a full
// disk) says what is left to resume: `newest`, the step of the newest complete checkpoint in --ckpt-dir, or -1.
template <typename Save>
auto naming_the_save(int step, bool background, int newest, std::filesystem::path const& ckpt_dir, Save&& save) {
    try {
        return save();
    } catch (Error const& e) {
        if (newest < 0) {
            fail("{}; no checkpoint is complete in {} yet: fix that, and run again", e.what(), ckpt_dir.string());
        }
        fail("{}; the newest checkpoint, {}, is whole: fix that, then continue with --resume latest", e.what(),
             (ckpt_dir / checkpoint_folder_name(newest)).string());
    } catch (std::bad_alloc const&) {
        fail("out of memory saving the checkpoint of step {} (the earlier checkpoints are intact): {}", step,
             background ? "--ckpt-async first copies the weights and AdamW's moments into host memory; save without "
                          "it, or give each rank more memory"
                        : "give each rank more memory");
    } catch (std::system_error const& error) {
        // std::thread's, where no thread could be made for the background writer: a bare "Resource temporarily
        // unavailable" said nothing of the save.
        if (error.code() != std::errc::resource_unavailable_try_again) throw;
        fail("cannot start the thread that writes the checkpoint of step {} in the background ({}): save without "
             "--ckpt-async, or give each rank more memory or threads (ulimit -u, -v)",
             step, error.code().message());
    }
}

}  // namespace

CheckpointPolicy::CheckpointPolicy(TrainOptions const& options, Decoder& model, AdamW& optimizer,
                                   TrainingData const& data, std::optional<CheckpointReader> const& resumed,
                                   int start_step, bool leader)
    : options_(options), model_(model), optimizer_(optimizer), data_(data), leader_(leader),
      last_saved_(saved_step(options, resumed, start_step)) {
    // A run that keeps checkpoints saves one and stops cleanly when the scheduler signals.
    if (!options.ckpt_dir.empty()) stop_signals_.emplace();
}

void CheckpointPolicy::before_step(int step, std::string const& output_failure) {
    if (in_flight_ && in_flight_->finished()) complete_background_save();
    stop_if_asked(step, output_failure);
}

void CheckpointPolicy::stop_if_asked(int step, std::string const& output_failure, bool on_signal) {
    if (!stop_signals_) return;
    // One all-reduce for both: the signal any rank holds, and whether rank 0's metrics failed.
    std::array<double, 2> asked = {on_signal ? static_cast<double>(stop_signals_->received_here()) : 0.0,
                                   output_failure.empty() ? 0.0 : 1.0};
    model_.grid().comm(Group::world).all_reduce_max(asked.data(), asked.size());
    int const signal = static_cast<int>(asked[0]);
    bool const failed = asked[1] != 0.0;
    if (signal == 0 && !failed) return;
    complete_background_save();
    fs::path const folder = last_saved_ == step ? options_.ckpt_dir / checkpoint_folder_name(step) : save(step);
    if (failed) {
        throw EndedAfterSave(fmt::format("{}; the run is saved first, as checkpoint {} (step {}): fix that, then "
                                         "continue with --resume latest",
                                         decided_by_rank_zero([&] { return output_failure; }), folder.string(), step));
    }
    throw StoppedBySignal(fmt::format("stopped by {} after {} steps; checkpoint {}; continue with --resume latest",
                                      stop_signal_name(signal), step, folder.string()));
}

void CheckpointPolicy::after_step(int done) {
    if (options_.ckpt_dir.empty() || options_.ckpt_every <= 0 || done % options_.ckpt_every != 0 ||
        done >= options_.steps) {
        return;
    }
    if (options_.ckpt_async) {
        start_background_save(done);
    } else {
        save(done);
    }
}

void CheckpointPolicy::at_end() {
    complete_background_save();
    if (options_.ckpt_dir.empty()) return;
    if (last_saved_ != options_.steps) {
        save(options_.steps);
    } else if (leader_) {
        // Resumed at its last step, the run saves nothing, and --keep pruned nothing with a save.
        prune_checkpoints(options_.ckpt_dir, options_.keep, options_.steps);
    }
}

void CheckpointPolicy::start_background_save(int step) {
    complete_background_save();  // at most one in flight
    Stopwatch watch;
    naming_the_save(step, true, last_saved_, options_.ckpt_dir, [&] {
        in_flight_.emplace(prepare_training_checkpoint(options_, model_, optimizer_, data_, step));
    });
    if (leader_) {
        fmt::print(stderr, "\ncheckpoint of step {}: state copied in {:.2f} s, written in the background\n", step,
                   watch.seconds());
    }
}

void CheckpointPolicy::complete_background_save() {
    if (!in_flight_) return;
    Stopwatch watch;
    fs::path const folder =
        naming_the_save(static_cast<int>(in_flight_->step()), true, last_saved_, options_.ckpt_dir,
                        [&] { return in_flight_->wait(); });
    last_saved_ = static_cast<int>(in_flight_->step());
    in_flight_.reset();
    if (leader_) {
        fmt::print(stderr, "\ncheckpoint of step {} saved to {} (the run waited {:.2f} s for it)\n", last_saved_,
                   folder.string(), watch.seconds());
    }
}

fs::path CheckpointPolicy::save(int step) {
    Stopwatch watch;
    fs::path const folder = naming_the_save(step, false, last_saved_, options_.ckpt_dir, [&] {
        return save_training_checkpoint(options_, model_, optimizer_, data_, step);
    });
    last_saved_ = step;
    if (leader_) {
        fmt::print(stderr, "\ncheckpoint of step {} saved to {} ({:.2f} s)\n", step, folder.string(), watch.seconds());
    }
    return folder;
}

}  // namespace axonn
