#include "axonn/checkpoint/checkpoint_writer.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_index.h"
#include "axonn/checkpoint/checkpoint_tensors.h"
#include "axonn/comm/communicator.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/safetensors.h"
#include "axonn/parallel/shard_layout.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <optional>

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

// This rank's range of `tensor` in serial order, collected from the ranks that hold its elements. Collective.
std::vector<float> collect_range(Communicator& world, ShardLayout const& layout, GridPosition const& position,
                                 CheckpointTensor const& tensor) {
    int const ranks = world.size();
    std::vector<std::int64_t> boundaries;
    for (int r = 0; r <= ranks; ++r) boundaries.push_back(range_begin(tensor.numel(), r, ranks));
    std::int64_t const begin = boundaries[world.rank()];
    std::vector<float> range(static_cast<std::size_t>(boundaries[world.rank() + 1] - begin));
    auto const sent = sent_ranges(layout, position, tensor);
    std::int64_t const local = sent.empty() ? 0 : sent.back().second;
    double rounds = static_cast<double>((local + exchange_chunk - 1) / exchange_chunk);
    world.all_reduce_max(&rounds, 1);
    std::size_t received = 0;
    for (std::int64_t round = 0; round < static_cast<std::int64_t>(rounds); ++round) {
        // Runs of consecutive serial indices, cut where the owner changes: (serial start, count) and the values.
        std::vector<std::vector<std::int64_t>> runs(ranks);
        std::vector<std::vector<float>> values(ranks);
        std::int64_t const window_begin = round * exchange_chunk, window_end = window_begin + exchange_chunk;
        for (auto const& [sent_begin, sent_end] : sent) {
            std::int64_t const end = std::min(sent_end, window_end);
            for (std::int64_t i = std::max(sent_begin, window_begin); i < end;) {
                std::int64_t const count = std::min(layout.serial_run(tensor.param, i), end - i);
                for (std::int64_t serial = layout.serial_index(tensor.param, i), left = count; left > 0;) {
                    auto const owner =
                        std::upper_bound(boundaries.begin(), boundaries.end(), serial) - boundaries.begin() - 1;
                    std::int64_t const take = std::min(left, boundaries[owner + 1] - serial);
                    runs[owner].insert(runs[owner].end(), {serial, take});
                    auto const from = tensor.local.begin() + (i + count - left);
                    values[owner].insert(values[owner].end(), from, from + take);
                    serial += take;
                    left -= take;
                }
                i += count;
            }
        }
        std::vector<std::int64_t> const got_runs = world.all_to_all(runs);
        std::vector<float> const got_values = world.all_to_all(values);
        std::size_t next_value = 0;
        for (std::size_t k = 0; k + 1 < got_runs.size(); k += 2) {
            AXONN_INVARIANT(got_runs[k] >= begin &&
                                got_runs[k] + got_runs[k + 1] <= begin + static_cast<std::int64_t>(range.size()),
                            "checkpoint: rank {} received elements outside its range of {}", world.rank(), tensor.name);
            std::copy_n(got_values.begin() + static_cast<std::ptrdiff_t>(next_value), got_runs[k + 1],
                        range.begin() + (got_runs[k] - begin));
            next_value += static_cast<std::size_t>(got_runs[k + 1]);
        }
        received += next_value;
    }
    AXONN_INVARIANT(received == range.size(), "checkpoint: rank {} received {} of the {} elements of its range of {}",
                    world.rank(), received, range.size(), tensor.name);
    return range;
}

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

// Writes this rank's files into `folder`; returns what the index needs of them (files and parts).
json write_rank_files(Communicator& world, ShardLayout const& layout, GridPosition const& position,
                      std::vector<CheckpointTensor> const& tensors, fs::path const& folder,
                      std::uint64_t max_file_bytes) {
    std::vector<PlannedFile> const plan = plan_files(tensors, world.rank(), world.size(), max_file_bytes);
    json record = {{"files", json::object()}, {"parts", json::array()}};
    std::size_t file = 0, piece = 0;
    std::optional<ChecksummedFile> out;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        std::vector<float> const range = collect_range(world, layout, position, tensors[t]);
        std::int64_t const range_start = range_begin(tensors[t].numel(), world.rank(), world.size());
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
    std::error_code error;
    fs::path replaced = destination;
    replaced += ".replaced";
    fs::remove_all(replaced, error);
    bool const replacing = fs::exists(destination, error);
    if (replacing) fs::rename(destination, replaced);
    fs::rename(partial, destination);
    sync_folder(destination.parent_path());
    write_file_atomically(destination / checkpoint_complete_file, fmt::format("step {}\n", index.step),
                          "checkpoint marker");
    if (replacing) {
        fs::remove(replaced / checkpoint_complete_file, error);
        fs::remove_all(replaced, error);
    }
}

}  // namespace

fs::path save_checkpoint(ProcessGrid& grid, ModelConfig const& config, LocalTensors const& local, std::int64_t step,
                         json const& run, CheckpointTarget const& target) {
    Communicator& world = grid.comm(Group::world);
    bool const leader = world.rank() == 0;
    GridPosition const position = GridPosition::of(grid);
    ShardLayout const layout(config.architecture().declarations, position);
    std::vector<CheckpointTensor> const tensors = checkpoint_tensors(layout, local);
    fs::path const destination = target.dir / checkpoint_folder_name(step);
    fs::path partial = destination;
    partial += ".partial";
    if (leader) {
        create_folder(target.dir, "checkpoint folder");
        std::error_code error;
        fs::remove_all(partial, error);  // a save that a crash interrupted
        create_folder(partial, "checkpoint folder");
    }
    world.barrier_quietly();
    json const record = write_rank_files(world, layout, position, tensors, partial,
                                         target.max_file_bytes);
    std::vector<std::string> const records = world.gather_text(record.dump());
    if (leader) {
        complete_checkpoint(build_index(grid.shape(), config, tensors, step, run, records), partial, destination);
        prune_checkpoints(target.dir, target.keep, step);
    }
    world.barrier_quietly();
    return destination;
}

}  // namespace axonn
