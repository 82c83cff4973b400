#include "axonn/parallel/batch_sum.h"

namespace axonn {

void sum_over_batch(ProcessGrid& grid, std::span<double> sums) {
    grid.comm(Group::z).all_reduce(sums.data(), sums.size());
    grid.comm(Group::data).all_reduce(sums.data(), sums.size());
}

double sum_over_batch(ProcessGrid& grid, double value) {
    sum_over_batch(grid, std::span(&value, 1));
    return value;
}

bool any_in_z_group(ProcessGrid& grid, bool mine) {
    double busy = mine ? 1.0 : 0.0;
    grid.comm(Group::z).all_reduce_max(&busy, 1);
    return busy != 0.0;
}

}  // namespace axonn
