// Saving a checkpoint from any grid, each rank writing only its share (checkpoint_index.h has the format).
//
// Every tensor is stored in its serial layout, cut into one contiguous range per rank: rank r of W writes
// elements [N·r/W, N·(r+1)/W) of each tensor of N elements. A rank's shard of a weight is scattered over that
// layout (ShardLayout maps each local element to its serial index), so the ranks first exchange runs of
// consecutive serial indices (ShardLayout::serial_run) with an all-to-all, a bounded number of elements at a time,
// and then each streams its ranges into its own safetensors files, none
// larger than max_file_bytes. Rank 0 writes the index with every file's size and CRC-32, renames the folder into
// place and marks it complete (checkpoint_dir.h).
#pragma once

#include "axonn/checkpoint/checkpoint_tensors.h"
#include "axonn/comm/grid.h"
#include "axonn/model/model_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>

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

}  // namespace axonn
