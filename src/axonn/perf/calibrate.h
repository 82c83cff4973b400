// Measuring the machine this job runs on, for the performance model: `axonn calibrate` writes the result as a
// machine profile (configs/machines/local.toml). A device of the profile is one MPI rank on one core, and the whole
// job counts as one node, since a machine without a second node cannot measure a network between nodes.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/kernels/backend.h"
#include "axonn/perf/machine_profile.h"

#include <string>

namespace axonn {

struct CalibrateOptions {
    std::string name = "local";
    bool quick = false;  // fewer shapes, message sizes and repetitions: under 10 s, even over a 1 Gbit/s link
};

// Every rank of the world must call it, with its job's backend (the CPU's, in fp32, GEMM tuning off: calibration
// measures the library's GEMM, not the tuner's choice) and a grid of every rank on the data axis; the profile is
// complete on rank 0 only. Rank 0 measures the compute numbers while the other ranks sleep (the bf16 rate on a bf16
// backend of its own); then groups of the first 2, 4, ... ranks time all-reduces.
MachineProfile calibrate_machine(CalibrateOptions const& options, Backend& backend, ProcessGrid& everyone);

// The comment lines written above a calibrated profile: when and how each number was measured, and which numbers
// stand in for what this machine cannot measure.
std::string calibration_notes(MachineProfile const& profile, CalibrateOptions const& options);

}  // namespace axonn
