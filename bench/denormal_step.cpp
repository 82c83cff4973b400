// A training step whose gradients are denormal, timed with denormals flushed (what axonn sets on every compute
// thread, core/float_environment.h) and without (gradual underflow: every thread's FTZ and DAZ cleared), side by
// side in one run: what flushing saves on this CPU when a run's gradients fade below fp32's smallest normal number.
//
// gpt2-small, B=4, T=64, on one thread. The final LayerNorm's scale is set to 1e-36: the logits are then nearly
// zero and their gradient ordinary (about 1/(B·T·V)), but the gradient of everything before the norm is that
// gradient times 1e-36, denormal, through every layer's backward GEMMs and into AdamW's moments. The learning
// rate is 0 so that the scale stays where it was put (AdamW still sweeps every moment). Modes alternate step by
// step, so a drift of the machine's speed falls on both; each mode's median and fastest step are printed.
//   OMP_NUM_THREADS=1 build/bench/denormal_step [steps per mode, default 5]
#include "axonn/core/float_environment.h"
#include "axonn/core/rng.h"
#include "axonn/core/timer.h"
#include "axonn/families/registry.h"
#include "axonn/model/decoder.h"
#include "axonn/train/job.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace {

using namespace axonn;

constexpr int B = 4, T = 64;

// The share of the gradients that are denormal (non-zero and below the smallest normal fp32 number).
double denormal_fraction(std::span<float const> grads) {
    auto const denormal = [](float g) { return std::fpclassify(g) == FP_SUBNORMAL; };
    return static_cast<double>(std::count_if(grads.begin(), grads.end(), denormal)) / grads.size();
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int const steps = argc > 1 ? std::atoi(argv[1]) : 5;
    StepOptions run;
    Job job(run, {GridShape{}, "x,y,z,data"});
    Architecture const architecture = model_preset("gpt2-small").validated_architecture();
    Decoder model(architecture, job.backend(), job.grid(), B, T, run.model);
    model.init_weights(1);
    int const final_norm = architecture.params.final_norm;
    std::fill_n(model.param(final_norm), architecture.width, 1e-36f);
    AdamW optimizer(model.segments(), model.layout().total(), job.backend(), AdamWConfig{});
    std::vector<std::int32_t> tokens(B * T), targets(B * T);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>(philox4x32({5, 1}, i)[0] % architecture.vocab_size);
        targets[i] = static_cast<std::int32_t>(philox4x32({5, 2}, i)[0] % architecture.vocab_size);
    }
    Batch const batch{B, T, tokens.data(), targets.data(), nullptr};

    std::vector<double> seconds[2];  // [flushed]
    double denormal_share[2] = {0, 0};
    for (int step = 0; step < 2 * (steps + 1); ++step) {
        bool const flushed = step % 2 == 0;
        flush_denormals(flushed);
        Stopwatch watch;
        train_step(model, optimizer, batch, 0.0f);
        double const elapsed = watch.seconds();
        if (step < 2) continue;  // each mode's first step touches fresh memory
        seconds[flushed].push_back(elapsed);
        denormal_share[flushed] = denormal_fraction(model.grads());
    }
    flush_denormals(true);
    fmt::print("gpt2-small B={} T={}, final norm scale 1e-36, {} steps per mode, one thread\n", B, T, steps);
    for (bool const flushed : {false, true}) {
        fmt::print("  denormals {:8}: median step {:.3f} s, fastest {:.3f} s, gradients denormal {:.1f}%\n",
                   flushed ? "flushed" : "kept", median(seconds[flushed]),
                   *std::min_element(seconds[flushed].begin(), seconds[flushed].end()),
                   100 * denormal_share[flushed]);
    }
    fmt::print("  flushing: {:.2f}x the speed\n", median(seconds[false]) / median(seconds[true]));
    MPI_Finalize();
}
