#include "axonn/checkpoint/checkpoint_writer.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_index.h"
#include "axonn/checkpoint/checkpoint_tensors.h"
#include "axonn/comm/communicator.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/host_buffer.h"
#include "axonn/io/safetensors.h"
#include "axonn/parallel/shard_layout.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <span>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Elements [begin, begin + count) of one checkpoint tensor, stored as one 1-D tensor of a file.
struct FilePiece {
    std::size_t tensor;
    std::int64_t begin;
    std::int64_t count;
};

struct PlannedFile {
    std::string name;
    std::vector<FilePiece> pieces;
};

std::string piece_name(std::string const& tensor, FilePiece const& piece) {
    return fmt::format("{}[{}:{}]", tensor, piece.begin, piece.begin + piece.count);
}

// This rank's ranges of every tensor, in tensor order, cut into files of at most max_file_bytes of data.
std::vector<PlannedFile> plan_files(std::vector<CheckpointTensor> const& tensors, int rank, int world,
                                    std::uint64_t max_file_bytes) {
    std::int64_t const per_file = std::max<std::int64_t>(1, static_cast<std::int64_t>(max_file_bytes / sizeof(float)));
    std::vector<PlannedFile> files;
    std::int64_t room = 0;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        std::int64_t begin = range_begin(tensors[t].numel(), rank, world);
        std::int64_t const end = range_begin(tensors[t].numel(), rank + 1, world);
        while (begin < end) {
            if (room == 0) {
                files.push_back({fmt::format("rank{:05}-{:03}.safetensors", rank, files.size()), {}});
                room = per_file;
            }
            std::int64_t const take = std::min(end - begin, room);
            files.back().pieces.push_back({t, begin, take});
            begin += take;
            room -= take;
        }
    }
    return files;
}

// Elements sent per all-to-all round: the exchange's memory stays bounded whatever the model's size.
constexpr std::int64_t exchange_chunk = std::int64_t{1} << 22;

// The local elements of `tensor` this rank sends: none unless it is of data replica 0 and owns the tensor
// (ShardLayout::owns), and of rows replicated over Y (key/value heads on more Y ranks than heads) only the first
// replica's, so that each element comes once.
std::vector<std::pair<std::int64_t, std::int64_t>> sent_ranges(ShardLayout const& layout, GridPosition const& position,
                                                               CheckpointTensor const& tensor) {
    auto const local = static_cast<std::int64_t>(tensor.local.size());
    if (position.data != 0 || !layout.owns(tensor.param)) return {};
    ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(tensor.param);
    if (position.y % replicated.factor == 0) return {{0, local}};
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    std::int64_t next = 0;
    for (auto const& [begin, end] : replicated.runs) {
        if (begin > next) ranges.emplace_back(next, begin);
        next = end;
    }
    if (next < local) ranges.emplace_back(next, local);
    return ranges;
}

// Where a rank's sending stands: tensor t, its sent range k, local element i.
struct SendCursor {
    std::size_t t = 0, k = 0;
    std::int64_t i = 0;
};

// The elements of this rank's range of each of `tensors`, in all.
std::size_t range_elements(std::span<CheckpointTensor const> tensors, int rank, int ranks) {
    std::size_t elements = 0;
    for (CheckpointTensor const& tensor : tensors) {
        elements += static_cast<std::size_t>(range_begin(tensor.numel(), rank + 1, ranks) -
                                             range_begin(tensor.numel(), rank, ranks));
    }
    return elements;
}

// This rank's ranges of `tensors`, each in serial order, one after the other in `out` (range_elements long; the
// returned spans point into it), collected from the ranks that hold their elements: in rounds of at most
// exchange_chunk elements sent per rank, the tensors together, so that a model of a thousand tensors costs a few
// collectives, not a thousand (each costs milliseconds where ranks share cores). Collective.
std::vector<std::span<float>> collect_ranges(Communicator& world, ShardLayout const& layout,
                                             GridPosition const& position, std::span<CheckpointTensor const> tensors,
                                             std::span<float> out) {
    int const ranks = world.size(), rank = world.rank();
    std::size_t const n = tensors.size();
    std::vector<std::vector<std::int64_t>> boundaries(n);
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> sent(n);
    std::vector<std::span<float>> ranges(n);
    std::int64_t to_send = 0;
    for (std::size_t t = 0, offset = 0; t < n; ++t) {
        for (int r = 0; r <= ranks; ++r) boundaries[t].push_back(range_begin(tensors[t].numel(), r, ranks));
        auto const elements = static_cast<std::size_t>(boundaries[t][rank + 1] - boundaries[t][rank]);
        ranges[t] = out.subspan(offset, elements);
        offset += elements;
        sent[t] = sent_ranges(layout, position, tensors[t]);
        for (auto const& [begin, end] : sent[t]) to_send += end - begin;
    }
    double rounds = static_cast<double>((to_send + exchange_chunk - 1) / exchange_chunk);
    world.all_reduce_max(&rounds, 1);
    // The cursor moved to the next element still to send (t == n: none left).
    SendCursor at;
    auto const settle = [&] {
        while (at.t < n) {
            if (at.k < sent[at.t].size()) {
                at.i = std::max(at.i, sent[at.t][at.k].first);
                if (at.i < sent[at.t][at.k].second) return;
                ++at.k;
            } else {
                ++at.t;
                at.k = 0;
                at.i = 0;
            }
        }
    };
    std::size_t received = 0;
    // Runs of consecutive serial indices, cut where the owner changes: (tensor, serial start, count), and the
    // values; emptied each round, their memory kept.
    std::vector<std::vector<std::int64_t>> runs(ranks);
    std::vector<std::vector<float>> values(ranks);
    for (std::int64_t round = 0; round < static_cast<std::int64_t>(rounds); ++round) {
        for (int r = 0; r < ranks; ++r) {
            runs[r].clear();
            values[r].clear();
        }
        for (std::int64_t budget = exchange_chunk; budget > 0 && (settle(), at.t < n);) {
            CheckpointTensor const& tensor = tensors[at.t];
            std::vector<std::int64_t> const& bounds = boundaries[at.t];
            std::int64_t const end = std::min(sent[at.t][at.k].second, at.i + budget);
            budget -= end - at.i;
            for (std::int64_t i = at.i; i < end;) {
                std::int64_t const count = std::min(layout.serial_run(tensor.param, i), end - i);
                for (std::int64_t serial = layout.serial_index(tensor.param, i), left = count; left > 0;) {
                    auto const owner = std::upper_bound(bounds.begin(), bounds.end(), serial) - bounds.begin() - 1;
                    std::int64_t const take = std::min(left, bounds[owner + 1] - serial);
                    runs[owner].insert(runs[owner].end(), {static_cast<std::int64_t>(at.t), serial, take});
                    auto const from = tensor.local.begin() + (i + count - left);
                    values[owner].insert(values[owner].end(), from, from + take);
                    serial += take;
                    left -= take;
                }
                i += count;
            }
            at.i = end;
        }
        std::vector<std::int64_t> const got_runs = world.all_to_all(runs);
        std::vector<float> const got_values = world.all_to_all(values);
        std::size_t next_value = 0;
        for (std::size_t k = 0; k + 2 < got_runs.size(); k += 3) {
            auto const t = static_cast<std::size_t>(got_runs[k]);
            std::int64_t const serial = got_runs[k + 1], count = got_runs[k + 2];
            AXONN_INVARIANT(t < n && serial >= boundaries[t][rank] && serial + count <= boundaries[t][rank + 1],
                            "checkpoint: rank {} received elements outside its ranges", rank);
            std::copy_n(got_values.begin() + static_cast<std::ptrdiff_t>(next_value), count,
                        ranges[t].begin() + (serial - boundaries[t][rank]));
            next_value += static_cast<std::size_t>(count);
        }
        received += next_value;
    }
    std::size_t const expected = out.size();
    AXONN_INVARIANT(received == expected, "checkpoint: rank {} received {} of the {} elements of its ranges", rank,
                    received, expected);
    return ranges;
}

// Elements of the checkpoint (all ranks together) whose ranges a synchronous save collects at once: a bound on the
// memory it adds, a quarter of a GiB of floats spread over the ranks.
constexpr std::int64_t collected_at_once = std::int64_t{1} << 26;

// A synchronous save's ranges, collected a group of consecutive tensors at a time (the same groups on every
// rank: they follow the tensors' sizes) as the files ask for them, in tensor order, into one buffer.
class GroupedRanges {
public:
    GroupedRanges(Communicator& world, ShardLayout const& layout, GridPosition const& position,
                  std::vector<CheckpointTensor> const& tensors)
        : world_(world), layout_(layout), position_(position), tensors_(tensors) {}

    // Tensor t's range, valid until the next group; every t in turn from 0. Collective where a group starts.
    std::span<float const> take(std::size_t t) {
        if (t >= first_ + group_.size()) {
            std::size_t last = t + 1;
            for (std::int64_t elements = tensors_[t].numel();
                 last < tensors_.size() && elements + tensors_[last].numel() <= collected_at_once; ++last) {
                elements += tensors_[last].numel();
            }
            std::span<CheckpointTensor const> const group = std::span(tensors_).subspan(t, last - t);
            std::size_t const elements = range_elements(group, world_.rank(), world_.size());
            if (elements > buffer_.floats().size()) buffer_ = HostBuffer(elements);
            first_ = t;
            group_ = collect_ranges(world_, layout_, position_, group, buffer_.floats().first(elements));
        }
        return group_[t - first_];
    }

private:
    Communicator& world_;
    ShardLayout const& layout_;
    GridPosition const& position_;
    std::vector<CheckpointTensor> const& tensors_;
    HostBuffer buffer_;
    std::size_t first_ = 0;
    std::vector<std::span<float>> group_;
};

// A safetensors file being written, with its size and CRC-32 so far.
class ChecksummedFile {
public:
    explicit ChecksummedFile(fs::path const& path) : file_(path, "checkpoint file") {}
    void write(void const* data, std::size_t bytes) {
        file_.write(data, bytes);
        crc_ = crc32_z(crc_, static_cast<unsigned char const*>(data), bytes);
        bytes_ += bytes;
    }
    StoredFile commit() {
        file_.commit();
        return {bytes_, static_cast<std::uint32_t>(crc_)};
    }

private:
    AtomicFile file_;
    uLong crc_ = crc32_z(0, nullptr, 0);
    std::uint64_t bytes_ = 0;
};

// A rank's writing of its files of a save: if it fails (a full disk), the save's partial folder is removed whole,
// the other ranks' files with it, so that the failed save gives back its space and leaves no step_N.partial behind
// (removing only its own files left a rank's that had finished, 1 save in 6 on two ranks). No save can complete
// without this rank's record, so nothing complete is lost; a rank still writing there fails on the missing folder
// as the job ends.
class RankFilesWritten {
public:
    explicit RankFilesWritten(fs::path folder) : folder_(std::move(folder)) {}
    RankFilesWritten(RankFilesWritten const&) = delete;
    RankFilesWritten& operator=(RankFilesWritten const&) = delete;
    ~RankFilesWritten() {
        if (complete_) return;
        std::error_code error;
        fs::remove_all(folder_, error);
    }
    void complete() { complete_ = true; }

private:
    fs::path folder_;
    bool complete_ = false;
};

// Writes this rank's files into `folder`, with this rank's range of tensor t from `range_of(t)` (asked in tensor
// order); returns what the index needs of them (files and parts). A failure removes what it wrote.
json write_rank_files(int rank, int world, std::vector<CheckpointTensor> const& tensors,
                      std::function<std::span<float const>(std::size_t)> const& range_of, fs::path const& folder,
                      std::uint64_t max_file_bytes) {
    std::vector<PlannedFile> const plan = plan_files(tensors, rank, world, max_file_bytes);
    json record = {{"files", json::object()}, {"parts", json::array()}};
    RankFilesWritten written(folder);
    std::size_t file = 0, piece = 0;
    std::optional<ChecksummedFile> out;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        std::span<float const> const range = range_of(t);
        std::int64_t const range_start = range_begin(tensors[t].numel(), rank, world);
        while (file < plan.size() && piece < plan[file].pieces.size() && plan[file].pieces[piece].tensor == t) {
            PlannedFile const& planned = plan[file];
            if (!out) {
                out.emplace(folder / planned.name);
                std::vector<SafetensorsEntry> entries;
                for (FilePiece const& p : planned.pieces) {
                    entries.push_back({piece_name(tensors[p.tensor].name, p), DType::f32, {p.count}, 0, 0});
                }
                std::string const header = safetensors_header_bytes(entries);
                out->write(header.data(), header.size());
            }
            FilePiece const& p = planned.pieces[piece];
            out->write(range.data() + (p.begin - range_start), static_cast<std::size_t>(p.count) * sizeof(float));
            record["parts"].push_back({{"tensor", tensors[t].name}, {"file", planned.name},
                                       {"name", piece_name(tensors[t].name, p)}, {"begin", p.begin},
                                       {"count", p.count}});
            if (++piece == planned.pieces.size()) {
                StoredFile const stored = out->commit();
                record["files"][planned.name] = {{"bytes", stored.bytes}, {"crc32", stored.crc32}};
                out.reset();
                ++file;
                piece = 0;
            }
        }
    }
    written.complete();
    return record;
}

// Rank 0: the index of the files every rank wrote.
CheckpointIndex build_index(GridShape const& grid, ModelConfig const& config,
                            std::vector<CheckpointTensor> const& tensors,
                            std::int64_t step, json const& run, std::vector<std::string> const& records) {
    CheckpointIndex index{step, config, grid, run, {}, {}};
    for (auto const& tensor : tensors) index.tensors[tensor.name].shape = tensor.shape;
    for (std::string const& text : records) {
        json const record = json::parse(text);
        for (auto const& [name, file] : record["files"].items()) {
            index.files[name] = {file["bytes"].get<std::uint64_t>(), file["crc32"].get<std::uint32_t>()};
        }
        for (json const& part : record["parts"]) {
            index.tensors[part["tensor"].get<std::string>()].parts.push_back(
                {part["file"], part["name"], part["begin"], part["count"]});
        }
    }
    for (auto& [name, tensor] : index.tensors) {
        std::sort(tensor.parts.begin(), tensor.parts.end(), [](auto const& a, auto const& b) { return a.begin < b.begin; });
    }
    return index;
}

// Rank 0: the index into the folder, the folder into place, then the completion marker.
void complete_checkpoint(CheckpointIndex const& index, fs::path const& partial, fs::path const& destination) {
    write_file_atomically(partial / checkpoint_index_file, checkpoint_index_json(index), "checkpoint index");
    move_checkpoint_into_place(partial, destination, [&] {
        write_file_atomically(destination / checkpoint_complete_file, checkpoint_marker_text(index.step),
                              "checkpoint marker");
    });
}

// The folder a save of `step` writes into first: DIR/step_N.partial, emptied by rank 0 (a save that a crash
// interrupted leaves one). Collective.
fs::path start_partial_folder(Communicator& world, CheckpointTarget const& target, std::int64_t step) {
    fs::path partial = target.dir / checkpoint_folder_name(step);
    partial += ".partial";
    if (world.rank() == 0) {
        create_folder(target.dir, "checkpoint folder");
        std::error_code error;
        fs::remove_all(partial, error);
        create_folder(partial, "checkpoint folder");
    }
    world.barrier_quietly();
    return partial;
}

// Every rank's record of its files to rank 0 of `ranks`, which completes the checkpoint and prunes older ones.
// Collective over `ranks`.
fs::path finish_save(Communicator& ranks, GridShape const& grid, ModelConfig const& config,
                     std::vector<CheckpointTensor> const& tensors, std::int64_t step, json const& run,
                     CheckpointTarget const& target, json const& record) {
    fs::path const destination = target.dir / checkpoint_folder_name(step);
    std::vector<std::string> const records = ranks.gather_text(record.dump());
    if (ranks.rank() == 0) {
        fs::path partial = destination;
        partial += ".partial";
        try {
            complete_checkpoint(build_index(grid, config, tensors, step, run, records), partial, destination);
        } catch (...) {
            // Every rank has written its files (their records are here): the incomplete save is removed whole,
            // giving back its space (a full disk), not left as step_N.partial.
            std::error_code error;
            fs::remove_all(partial, error);
            throw;
        }
        prune_checkpoints(target.dir, target.keep, step);
    }
    ranks.barrier_quietly();
    return destination;
}

}  // namespace

fs::path save_checkpoint(ProcessGrid& grid, ModelConfig const& config, LocalTensors const& local, std::int64_t step,
                         json const& run, CheckpointTarget const& target) {
    Communicator& world = grid.comm(Group::world);
    GridPosition const position = GridPosition::of(grid);
    ShardLayout const layout(with_vocab_split(config.architecture().declarations, local.vocab_split), position);
    std::vector<CheckpointTensor> const tensors = checkpoint_tensors(layout, local);
    fs::path const partial = start_partial_folder(world, target, step);
    GroupedRanges ranges(world, layout, position, tensors);
    json const record = write_rank_files(
        world.rank(), world.size(), tensors, [&](std::size_t t) { return ranges.take(t); }, partial,
        target.max_file_bytes);
    return finish_save(world, grid.shape(), config, tensors, step, run, target, record);
}

namespace {

// A copy of `local` in host memory `into` (sized for all three), and views of it.
LocalTensors copy_local(LocalTensors const& local, HostBuffer& into) {
    into = HostBuffer(local.params.size() + local.exp_avg.size() + local.exp_avg_sq.size());
    std::span<float> rest = into.floats();
    auto const copy = [&](std::span<float const> from) {
        std::span<float> const to = rest.first(from.size());
        std::copy(from.begin(), from.end(), to.begin());
        rest = rest.subspan(from.size());
        return std::span<float const>(to);
    };
    std::span<float const> const params = copy(local.params), exp_avg = copy(local.exp_avg);
    return {params, exp_avg, copy(local.exp_avg_sq), local.vocab_split};
}

}  // namespace

PreparedSave::PreparedSave(ProcessGrid& grid, ModelConfig const& config, LocalTensors const& local, std::int64_t step,
                           json run, CheckpointTarget target)
    : config_(config),
      step_(step),
      run_(std::move(run)),
      target_(std::move(target)),
      position_(GridPosition::of(grid)),
      layout_(with_vocab_split(config.architecture().declarations, local.vocab_split), position_) {
    Communicator& world = grid.comm(Group::world);
    tensors_ = checkpoint_tensors(layout_, copy_local(local, local_copy_));
    partial_ = start_partial_folder(world, target_, step);
    // The writers exchange their ranges on a communicator of their own, beside the training's collectives.
    exchange_ = world.split(0, world.rank(), Group::world, exchange_traffic_);
}

PreparedSave::~PreparedSave() = default;

fs::path PreparedSave::write() {
    Communicator& exchange = *exchange_;
    host_ = HostBuffer(range_elements(tensors_, exchange.rank(), exchange.size()));
    std::vector<std::span<float>> const ranges = collect_ranges(exchange, layout_, position_, tensors_, host_.floats());
    local_copy_ = HostBuffer();  // exchanged: only the ranges are still needed
    for (CheckpointTensor& tensor : tensors_) tensor.local = {};
    json const record = write_rank_files(
        exchange.rank(), exchange.size(), tensors_, [&](std::size_t t) { return ranges[t]; }, partial_,
        target_.max_file_bytes);
    host_ = HostBuffer();
    return finish_save(exchange, position_.shape, config_, tensors_, step_, run_, target_, record);
}

}  // namespace axonn
