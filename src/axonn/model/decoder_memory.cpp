#include "axonn/model/decoder_memory.h"

#include "axonn/model/decoder_layout.h"
#include "axonn/parallel/grad_scatter.h"
#include "axonn/parallel/gradient_sync.h"
#include "axonn/parallel/replicated_rows.h"
#include "axonn/parallel/vocab_parallel.h"
#include "axonn/parallel/weight_gather.h"

#include <algorithm>

namespace axonn {

using namespace decoder_layout;

DecoderMemory decoder_memory(Architecture const& model, GridShape const& grid, int local_batch, int seq,
                             DecoderOptions const& options) {
    Architecture const architecture = model.with_vocab_split(options.vocab_split, grid, options.precision);
    ShardLayout const layout(architecture.declarations, GridPosition{grid});
    std::int64_t const parameters = layout.total();
    std::int64_t const gemm_bytes = dtype_size(options.precision);  // per element of a GEMM's weight or operand
    bool const mixed = options.precision != DType::f32;
    LocalDims const dims(architecture, grid, local_batch, seq);
    require_sizes_fit(dims);
    ActivationLayout const activations(dims, options);
    std::int64_t const statistics_bytes = dims.BT * 2 * 8;
    std::int64_t const max_block = max_linear_block(layout, architecture);
    std::int64_t const workspace_bytes =
        VocabBlocks::workspace_bytes(grid.z, vocab_blocks(architecture), vocab_block(dims), options.precision,
                                     options.grad_scatter_comm) +
        buffer_numel(
            WeightGather::buffer_numel(grid.z, max_block, cached_weight_numel(dims, layout, architecture, options))) *
            gemm_bytes +
        buffer_numel(GradScatter::buffer_numel(grid.z, max_block, scatter_ring)) * 4 +
        buffer_numel(GradScatter::staging_numel(grid.z, max_block, scatter_ring, options.grad_scatter_comm)) * 2 +
        buffer_numel(GradientSync::mirror_numel(layout, grid.data, options.grad_sum_comm)) * 2 +
        buffer_numel(bf16_staging_numel(dims, grid, options)) * gemm_bytes +
        ReplicatedRowSum::workspace_bytes(layout, grid.y, options.grad_sum_comm) +
        bf16_operand_numel(dims, options) * 2;
    return {parameters * 4 + (mixed ? parameters * gemm_bytes : 0), parameters * 4, 2 * parameters * 4,
            (activations.total + activations.grad_total) * 4 + buffer_numel(activations.bf16_total) * 2 +
                statistics_bytes,
            workspace_bytes};
}

}  // namespace axonn
