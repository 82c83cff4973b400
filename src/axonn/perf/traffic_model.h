// Predicted communication of one training step (forward, backward, gradient sync, norm) on one rank, derived from
// what this project's layers do (model/decoder*.cpp, parallel/*), not from AxoNN's coded formulas (which put a
// width factor on the wrong side of transposed layers). Every rank of a grid issues the same
// collectives, so one rank's prediction is every rank's. Bytes follow the communication layer's definition
// (comm/communicator.h): an all-reduce counts its buffer, an all-gather its gathered output, a reduce-scatter
// its input; a group of one moves nothing. The perfmodel tests require equality with the measured log.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/decoder.h"
#include "axonn/model/model_config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

struct StepShape {
    ModelConfig model;  // any family
    GridShape grid;
    int batch = 8;        // global batch, sequences
    int seq = 64;
    int micro_batch = 0;  // sequences per data × z replica and forward pass; 0 = batch / (data · z), no accumulation
    DecoderOptions run;   // overlap, recomputation, weight caching, precision, as the trainer runs

    int replica_batch() const { return batch / grid.batch_replicas(); }
    int micro_batches() const { return micro_batch > 0 ? replica_batch() / micro_batch : 1; }
    int local_batch() const { return micro_batch > 0 ? micro_batch : replica_batch(); }
    // The model as the decoder lays it out for this run (its vocabulary split).
    Architecture decoder() const { return model.architecture().with_vocab_split(run.vocab_split, grid, run.precision); }
};

// One collective kind of one step: what the comm layer's TrafficLog would hold for it.
struct PredictedCollective {
    std::string op;  // all_reduce, all_reduce_max, all_gather, reduce_scatter
    Group group;
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    // What the collective can hide behind when communication overlaps computation (time model input):
    //   none              it is waited on at once (statistics, the loss, the embedding);
    //   later_chunks      a chunk of a Linear's forward all-reduce, under the GEMMs of its later chunks;
    //   dw_gemm           a chunk of a Linear's dX all-reduce, under its later chunks and its dW GEMM (OAR);
    //   previous_linear   a weight all-gather, under the previous Linear in execution order (OAG);
    //   rest_of_backward  a dW reduce-scatter, or the gradient sync of a layer, under the backward still to run.
    enum class Overlap { none, later_chunks, dw_gemm, previous_linear, rest_of_backward } overlap = Overlap::none;
    // The part of the step whose computation it can hide behind: the forward, or the backward (with the layers'
    // recomputed forwards, which run inside it). A collective of the backward cannot hide under the forward's
    // computation, which is over before it is issued, and the other way round.
    enum class Phase { forward, backward } phase = Phase::forward;
};

std::vector<PredictedCollective> predict_step_traffic(StepShape const& step);


}  // namespace axonn
