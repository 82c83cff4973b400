#include "axonn/train/background_save.h"

#include <mpi.h>

namespace axonn {

namespace {

// Whether a thread beside the training may make MPI calls: the writer exchanges ranges over MPI.
bool mpi_from_any_thread() {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided == MPI_THREAD_MULTIPLE;
}

}  // namespace

BackgroundSave::BackgroundSave(std::unique_ptr<PreparedSave> save) : save_(std::move(save)) {
    auto const write = [this] {
        try {
            folder_ = save_->write();
        } catch (...) {
            failure_ = std::current_exception();
        }
        finished_.store(true, std::memory_order_release);
    };
    if (mpi_from_any_thread()) {
        writer_ = std::thread(write);
    } else {
        write();  // an MPI without MPI_THREAD_MULTIPLE: written here, before training goes on
    }
}

BackgroundSave::~BackgroundSave() {
    if (writer_.joinable()) writer_.join();
}

std::filesystem::path BackgroundSave::wait() {
    if (writer_.joinable()) writer_.join();
    if (failure_) std::rethrow_exception(failure_);
    return folder_;
}

}  // namespace axonn
