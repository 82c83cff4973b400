// Where a training step's time goes, measured: the kernels' spans of each step (kernels/tracing_backend.h) summed
// by kind, the time the rank waited for collectives (the exposed communication), and the rest of the step, which
// no kernel or wait covers (the framework between kernels, copies, the loss's host work). `axonn bench` prints it
// and its JSON carries it; its --trace shows the same spans, the kernels' categories being these kinds.
#pragma once

#include "axonn/core/trace.h"

#include <map>
#include <span>
#include <string>

namespace axonn {

// Seconds per step.
struct StepBreakdown {
    double step_s = 0;
    double gemm_s = 0;
    double attention_s = 0;
    double norm_s = 0;
    double elementwise_s = 0;
    double optimizer_s = 0;
    double comm_exposed_s = 0;
    double rest_s = 0;                       // step_s less all of the above
    std::map<std::string, double> kernel_s;  // each kernel's time, by name
    int steps = 0;                           // how many steps the means are over
};

// The mean breakdown of the steps added.
class StepBreakdownSum {
public:
    // One step of `step_s` seconds: the spans it recorded (the kernels' track counts, the others are ignored) and
    // the seconds it waited for collectives.
    void add_step(std::span<TraceEvent const> events, double waited_s, double step_s);
    StepBreakdown mean() const;

private:
    StepBreakdown sum_;
};

}  // namespace axonn
