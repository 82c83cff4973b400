// Saving a checkpoint from any grid, each rank writing only its share (checkpoint_index.h has the format).
//
// Every tensor is stored in its serial layout, cut into one contiguous range per rank: rank r of W writes
// elements [N·r/W, N·(r+1)/W) of each tensor of N elements. A rank's shard of a weight is scattered over that
// layout (ShardLayout maps each local element to its serial index), so the ranks first exchange runs of
// consecutive serial indices (ShardLayout::serial_run) with an all-to-all, a bounded number of elements at a time
// and many tensors per round (not a round of collectives per tensor: each costs milliseconds where ranks share
// cores), and then each streams its ranges into its own safetensors files, none larger than max_file_bytes. Rank 0 writes the index with every file's size and CRC-32, renames the folder into
// place and marks it complete (checkpoint_dir.h).
#pragma once

#include "axonn/checkpoint/checkpoint_tensors.h"
#include "axonn/comm/communicator.h"
#include "axonn/comm/grid.h"
#include "axonn/core/host_buffer.h"
#include "axonn/model/model_config.h"
#include "axonn/parallel/shard_layout.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace axonn {

struct CheckpointTarget {
    std::filesystem::path dir;                         // the run's --ckpt-dir
    int keep = 0;                                      // complete checkpoints kept; 0 = all
    std::uint64_t max_file_bytes = std::uint64_t{1} << 31;
};

// Saves step `step` into target.dir / checkpoint_folder_name(step), replacing one of that step, and returns that
// folder. Collective over the grid's world; `run` is the trainer's state (null for weights alone).
std::filesystem::path save_checkpoint(ProcessGrid& grid, ModelConfig const& config, LocalTensors const& tensors,
                                      std::int64_t step, nlohmann::json const& run, CheckpointTarget const& target);

// The same save in two parts, for one that does not stop training. The constructor (collective, at the step
// boundary) copies this rank's shards into host memory: the model may change as soon as it returns. write() then
// does the rest on a communicator of its own: the ranges exchanged, the files written into DIR/step_N.partial,
// and rank 0 completing the checkpoint and pruning, as save_checkpoint does. Every rank calls write() at once, on
// a thread beside training (MPI must provide MPI_THREAD_MULTIPLE) or on the training thread. It holds up to two
// copies of this rank's share (its shards, then its ranges) until the files are written.
class PreparedSave {
public:
    PreparedSave(ProcessGrid& grid, ModelConfig const& config, LocalTensors const& tensors, std::int64_t step,
                 nlohmann::json run, CheckpointTarget target);
    ~PreparedSave();
    PreparedSave(PreparedSave const&) = delete;
    PreparedSave& operator=(PreparedSave const&) = delete;

    std::int64_t step() const { return step_; }
    // Returns the checkpoint's folder. Collective over the ranks' calls.
    std::filesystem::path write();

private:
    ModelConfig config_;
    std::int64_t step_;
    nlohmann::json run_;
    CheckpointTarget target_;
    GridPosition position_;
    ShardLayout layout_;
    HostBuffer local_copy_;                  // this rank's shards as they were at the step
    std::vector<CheckpointTensor> tensors_;  // names, shapes, and views of local_copy_ until it is exchanged
    std::filesystem::path partial_;
    TrafficLog exchange_traffic_;
    std::unique_ptr<Communicator> exchange_;
    HostBuffer host_;  // this rank's range of each tensor, in serial order, one after another
};

}  // namespace axonn
