// A checkpoint written while training goes on (--ckpt-async): the state was copied into host memory at the step
// boundary (PreparedSave), and a thread of its own on every rank exchanges the ranges, writes the files and
// completes the checkpoint (PreparedSave::write, on a communicator of its own); the training thread learns at a
// step boundary that every rank's writer has finished. Where MPI does not provide MPI_THREAD_MULTIPLE, the save is
// written at once, on the training thread.
#pragma once

#include "axonn/checkpoint/checkpoint_writer.h"

#include <atomic>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>

namespace axonn {

class BackgroundSave {
public:
    // Starts writing `save`'s files.
    explicit BackgroundSave(std::unique_ptr<PreparedSave> save);
    // Waits for the writer: a run that ends early (an error on another rank) never leaves it running at exit.
    ~BackgroundSave();
    BackgroundSave(BackgroundSave const&) = delete;
    BackgroundSave& operator=(BackgroundSave const&) = delete;

    std::int64_t step() const { return save_->step(); }
    // Whether this rank's writer has finished (well or not). Every rank's writer finishes with the checkpoint
    // complete (their last act is a barrier), so no rank needs to ask the others.
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    // Waits for this rank's writer and throws what it threw (a full disk); returns the checkpoint's folder.
    std::filesystem::path wait();

private:
    std::unique_ptr<PreparedSave> save_;
    std::atomic<bool> finished_{false};
    std::exception_ptr failure_;
    std::filesystem::path folder_;
    std::thread writer_;
};

}  // namespace axonn
