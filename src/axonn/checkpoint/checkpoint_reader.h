// Reading a checkpoint onto any grid. Each rank reads only the byte ranges that hold its own shards: the serial
// index of each of its elements (ShardLayout) says which part of which file holds it, and consecutive indices are
// read with one pread. Nothing a file claims is trusted: the index is checked when opened (checkpoint_index.h),
// every file's size and CRC-32 before any weight is read (verify), and every safetensors header against the
// index when a part is first read.
#pragma once

#include "axonn/checkpoint/checkpoint_index.h"
#include "axonn/comm/communicator.h"
#include "axonn/core/file_io.h"
#include "axonn/io/safetensors.h"
#include "axonn/parallel/shard_layout.h"

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <unordered_map>

namespace axonn {

// Where this rank's shards go, in its ShardLayout's flat order; empty moments are not read.
struct LocalBuffers {
    std::span<float> params;
    std::span<float> exp_avg;
    std::span<float> exp_avg_sq;
};

class CheckpointReader {
public:
    // Opens a complete checkpoint folder and checks its index. Errors name the folder.
    explicit CheckpointReader(std::filesystem::path folder);

    CheckpointIndex const& index() const { return index_; }
    std::filesystem::path const& folder() const { return folder_; }
    // Whether it holds a run to resume (the trainer's state) and not weights alone. A run state without both AdamW
    // moments of every weight, in the weight's shape, is a damaged checkpoint: an axonn::Error naming the moment.
    bool has_training_state() const;

    // Checks every file's size and CRC-32, the files shared out over the ranks of `world`, and throws the same
    // axonn::Error on every rank if one is missing or damaged. Collective over `world`.
    void verify(Communicator& world);
    // Fills this rank's shards of the weights (and of the moments, where `out` has room for them). A value that is
    // not finite is damage, named with its tensor (saved with its checksum, so no other check sees it): a NaN in a
    // row the data never reads trained on unseen into every later checkpoint, and one in a moment made the first
    // update's weights NaN, the run "diverged" and the learning rate blamed.
    void read_local(ShardLayout const& layout, LocalBuffers const& out);
    // A whole tensor in its serial layout.
    Tensor read_tensor(std::string const& name);

    // Ends with an axonn::Error: "checkpoint DIR is damaged: <problem>; resume from another one, such as ...".
    [[noreturn]] void damaged(std::string const& problem) const;

private:
    struct OpenFile {
        InputFile input;
        SafetensorsHeader header;
        std::unordered_map<std::string, SafetensorsEntry const*> entries;  // into header, by name
    };
    OpenFile& file(std::string const& name);
    void read_range(std::string const& tensor, std::int64_t begin, std::int64_t count, float* out);
    void read_shard(std::string const& tensor, ShardLayout const& layout, int id, float* out);

    std::filesystem::path folder_;
    CheckpointIndex index_;
    std::map<std::string, OpenFile> files_;
};

}  // namespace axonn
