// What a decoder allocates on one rank, computed without allocating: the start-up banner's memory line, and the
// memory model the planner ranks grids with (checked against the allocator's peak in the perfmodel tests).
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/architecture.h"
#include "axonn/model/decoder_options.h"

#include <cstdint>

namespace axonn {

// Bytes one process allocates for a model and its AdamW, for the start-up banner and the memory model.
struct DecoderMemory {
    std::int64_t parameter_bytes;  // the fp32 master weights, and their bf16 copy in mixed precision
    std::int64_t gradient_bytes;
    std::int64_t optimizer_bytes;   // AdamW's two moments
    std::int64_t activation_bytes;  // kept for the backward, plus the backward's scratch and the statistics
    std::int64_t workspace_bytes;   // weight blocks gathered over Z and their gradient buffers (0 without a Z split),
                                    // and the backend's bf16 copies of GEMM operands in mixed precision
    std::int64_t total() const {
        return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes + workspace_bytes;
    }
};

// What a model of this architecture on this grid position with this many local sequences allocates, computed
// without allocating.
DecoderMemory decoder_memory(Architecture const& architecture, GridShape const& grid, int local_batch, int seq,
                             DecoderOptions const& options = {});

}  // namespace axonn
