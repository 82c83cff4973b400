// Sums over the global batch. Its rows are split over Z and data (each (data, z) position holds B/(G_data·G_z)
// of them; the X and Y ranks of a position hold the same rows), so a rank's sum of per-token numbers becomes the
// whole batch's by an all-reduce over Z, then over data. The one place where loss weights, losses and per-prompt
// or per-document results are summed over the batch replicas. Each is a blocking collective: its caller needs the
// sum before it can go on (a loss's normalisation, a token to feed back), so there is nothing to overlap it with.
#pragma once

#include "axonn/comm/grid.h"

#include <span>

namespace axonn {

// sums[i] = Σ over every (data, z) replica of sums[i] (in place; each X and Y rank of a replica gives the same).
void sum_over_batch(ProcessGrid& grid, std::span<double> sums);
double sum_over_batch(ProcessGrid& grid, double value);

// Whether any rank of this rank's Z group passes true: the ranks of a Z group gather each other's weights in every
// forward, so one that still has work keeps the others stepping.
bool any_in_z_group(ProcessGrid& grid, bool mine);

}  // namespace axonn
