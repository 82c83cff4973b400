// The tracing wrapper on a backend whose operations only queue work on a device: while spans are recorded, each
// operation's span must wait for the device at both ends (or it would time the queueing, not the kernels: the
// first GPU run's breakdown put 39 of a 72 ms step into the one kernel that read a result back); while nothing is
// recorded, and on a host backend, it must not wait at all (a step would lose its queueing ahead for nothing).

#include "axonn/core/trace.h"
#include "axonn/core/timer.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/kernels/tracing_backend.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace axonn {
namespace {

// The CPU's kernels, with the memory it is told to claim, noting when it is asked to wait for its device.
class WaitCountingBackend final : public CpuBackend {
public:
    WaitCountingBackend(Memory memory, std::vector<double>& waits) : memory_(memory), waits_(waits) {}
    Memory memory() const override { return memory_; }
    void synchronize() override { waits_.push_back(trace_seconds()); }

private:
    Memory memory_;
    std::vector<double>& waits_;
};

struct Traced {
    std::vector<double> waits;
    TracingBackend backend;
    explicit Traced(Memory memory) : backend(std::make_unique<WaitCountingBackend>(memory, waits)) {}
};

std::vector<float> const a{1, 2, 3}, b{4, 5, 6};

TEST(TracingBackend, ADeviceSpanWaitsForTheDeviceAtBothEnds) {
    Traced traced(Memory::device);
    std::vector<float> sum(3);
    TraceRecorder const recorder(16);
    traced.backend.residual_forward(sum.data(), a.data(), b.data(), 3);
    EXPECT_EQ(sum, (std::vector<float>{5, 7, 9}));
    ASSERT_EQ(traced.waits.size(), 2u);
    ASSERT_EQ(recorder.events().size(), 1u);
    TraceEvent const& span = recorder.events()[0];
    EXPECT_LE(traced.waits[0], span.begin_s);  // the work queued before it is not its own
    EXPECT_GE(traced.waits[1], span.begin_s);  // its own work ends inside it
    EXPECT_LE(traced.waits[1], span.end_s);
}

TEST(TracingBackend, AnOperationThatReturnsAValueWaitsToo) {
    Traced traced(Memory::device);
    TraceRecorder const recorder(16);
    GemmInput const input = traced.backend.gemm_input(a.data(), 3);
    EXPECT_EQ(input.values, a.data());  // the fp32 backend hands its operand on as it is
    EXPECT_EQ(traced.waits.size(), 2u);
    EXPECT_EQ(recorder.events().size(), 1u);
}

TEST(TracingBackend, NothingWaitsWhileNothingIsRecorded) {
    Traced traced(Memory::device);
    std::vector<float> sum(3);
    traced.backend.residual_forward(sum.data(), a.data(), b.data(), 3);
    EXPECT_TRUE(traced.waits.empty());
}

TEST(TracingBackend, AHostBackendsSpansDoNotWait) {
    Traced traced(Memory::host);
    std::vector<float> sum(3);
    TraceRecorder const recorder(16);
    traced.backend.residual_forward(sum.data(), a.data(), b.data(), 3);
    EXPECT_TRUE(traced.waits.empty());
    EXPECT_EQ(recorder.events().size(), 1u);
}

}  // namespace
}  // namespace axonn
