#include "axonn/core/trace.h"

#include "axonn/core/error.h"
#include "axonn/core/timer.h"

namespace axonn {
namespace {

TraceRecorder* recording = nullptr;

}  // namespace

TraceRecorder::TraceRecorder(std::size_t max_events) : max_events_(max_events) {
    AXONN_INVARIANT(recording == nullptr, "two trace recorders at once");
    recording = this;
}

TraceRecorder::~TraceRecorder() { recording = nullptr; }

TraceRecorder* TraceRecorder::active() { return recording != nullptr && !recording->paused_ ? recording : nullptr; }

void TraceRecorder::add(TraceEvent event) {
    if (events_.size() >= max_events_) {
        truncated_ = true;
        return;
    }
    events_.push_back(std::move(event));
}

TraceSpan::TraceSpan(char const* name, TraceTrack track, char const* category) : track_(track), category_(category) {
    if (TraceRecorder::active() != nullptr) begin(name);
}

void TraceSpan::begin(std::string name) {
    name_ = std::move(name);
    begin_s_ = trace_seconds();
}

TraceSpan::~TraceSpan() {
    if (begin_s_ < 0) return;
    if (TraceRecorder* recorder = TraceRecorder::active()) {
        try {
            recorder->add({std::move(name_), track_, begin_s_, trace_seconds(), category_});
        } catch (...) {
            // Out of memory for the trace: the run goes on without this span.
        }
    }
}

}  // namespace axonn
