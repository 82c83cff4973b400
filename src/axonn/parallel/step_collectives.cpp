#include "axonn/parallel/step_collectives.h"

namespace axonn {

StepCollectives::StepCollectives(ProcessGrid& grid, Backend& backend, ShardLayout const& layout,
                                 StepCollectivesOptions const& options)
    : weights(grid.comm(Group::z_prefetch), options.precision, options.max_block_numel, options.overlap,
              options.cached_numel, backend.memory()),
      weight_grads(backend, grid.comm(Group::z), options.max_block_numel, options.scatter_ring, options.overlap,
                   options.grad_scatter_comm),
      sync(layout, backend, grid.comm(Group::z), grid.comm(Group::data), weight_grads, options.overlap,
           options.grad_sum_comm) {}

}  // namespace axonn
