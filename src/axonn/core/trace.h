// A timeline of what a rank does, for `--trace FILE` (Chrome's trace format, which Perfetto and chrome://tracing
// open). While a TraceRecorder is recording, TraceSpan objects record their lifetime as a span on a track: the
// steps, passes and layers on one, the kernels and the waits for collectives on another (the rank's main thread
// runs them one after the other, so the spans of a track nest or follow each other). The communication layer's
// per-call records become the collectives' spans, on tracks of their own (train/trace_file.h). Nothing is
// recorded while no recorder is active, and a span then costs one pointer test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace axonn {

enum class TraceTrack { steps, kernels };

struct TraceEvent {
    std::string name;
    TraceTrack track;
    double begin_s;  // trace clock (core/timer.h)
    double end_s;
    char const* category = nullptr;  // a kernel's kind (kernels/tracing_backend.h), a string literal; or none
};

class TraceRecorder {
public:
    // Starts recording into this recorder (one at a time); at most max_events are kept.
    explicit TraceRecorder(std::size_t max_events);
    ~TraceRecorder();  // stops recording
    TraceRecorder(TraceRecorder const&) = delete;
    TraceRecorder& operator=(TraceRecorder const&) = delete;

    static TraceRecorder* active();
    void add(TraceEvent event);
    std::vector<TraceEvent> const& events() const { return events_; }
    bool truncated() const { return truncated_; }
    void pause(bool paused) { paused_ = paused; }

private:
    std::size_t max_events_;
    std::vector<TraceEvent> events_;
    bool truncated_ = false;
    bool paused_ = false;
};

// Records [construction, destruction) as an event, if a recorder is active. The name is built only then.
class TraceSpan {
public:
    // category: a string literal that outlives the recorder, or null.
    TraceSpan(char const* name, TraceTrack track, char const* category = nullptr);
    template <typename Name>
    TraceSpan(TraceTrack track, Name&& make_name) : track_(track) {
        if (TraceRecorder::active() != nullptr) begin(make_name());
    }
    ~TraceSpan();
    TraceSpan(TraceSpan const&) = delete;
    TraceSpan& operator=(TraceSpan const&) = delete;

private:
    void begin(std::string name);

    TraceTrack track_;
    char const* category_ = nullptr;
    std::string name_;
    double begin_s_ = -1;
};

}  // namespace axonn
