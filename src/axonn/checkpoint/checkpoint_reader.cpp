#include "axonn/checkpoint/checkpoint_reader.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// "(the previous complete checkpoint is DIR/step_00000200)", or a hint that there is none.
std::string earlier_checkpoint(fs::path const& folder) {
    std::string previous;
    for (auto const& entry : complete_checkpoints(folder.parent_path())) {
        if (entry.path.filename() != folder.filename()) previous = entry.path.string();
    }
    return previous.empty() ? "no other complete checkpoint is beside it"
                            : fmt::format("use another one, such as {}", previous);
}

enum class FileProblem { none = 0, missing = 1, size = 2, checksum = 3 };

FileProblem check_file(fs::path const& path, StoredFile const& expected) {
    InputFile input;
    try {
        input = open_input_file(path, "checkpoint file", "");
    } catch (Error const&) {
        return FileProblem::missing;
    }
    if (static_cast<std::uint64_t>(input.info.st_size) != expected.bytes) return FileProblem::size;
    // Read in pieces of at most 4 MiB, into a buffer no larger than the file and not cleared first: a checkpoint
    // of many small files would otherwise spend its check zeroing 4 MiB per file.
    std::size_t const piece = static_cast<std::size_t>(std::min<std::uint64_t>(std::uint64_t{1} << 22, expected.bytes));
    auto const buffer = std::make_unique_for_overwrite<unsigned char[]>(piece);
    uLong crc = crc32_z(0, nullptr, 0);
    for (std::uint64_t done = 0; done < expected.bytes;) {
        std::size_t const n = static_cast<std::size_t>(std::min<std::uint64_t>(piece, expected.bytes - done));
        try {
            read_exactly(input, done, buffer.get(), n, "checkpoint file");
        } catch (Error const&) {
            return FileProblem::size;
        }
        crc = crc32_z(crc, buffer.get(), n);
        done += n;
    }
    return crc == expected.crc32 ? FileProblem::none : FileProblem::checksum;
}

std::string describe(FileProblem problem, StoredFile const& expected) {
    switch (problem) {
        case FileProblem::missing: return "is missing or unreadable";
        case FileProblem::size: return fmt::format("is not the {} bytes the index records (truncated?)", expected.bytes);
        case FileProblem::checksum: return "does not match its CRC-32 (a flipped bit?)";
        case FileProblem::none: break;
    }
    return "is fine";
}

}  // namespace

CheckpointReader::CheckpointReader(fs::path folder) : folder_(std::move(folder)) {
    std::error_code error;
    AXONN_REQUIRE(fs::is_regular_file(folder_ / checkpoint_complete_file, error),
                  "checkpoint {} is incomplete (its save was interrupted, or it is no checkpoint): {}",
                  folder_.string(), earlier_checkpoint(folder_));
    std::string const text =
        read_input_file(folder_ / checkpoint_index_file, "checkpoint index", "the checkpoint is damaged",
                        max_checkpoint_index_bytes);
    try {
        index_ = parse_checkpoint_index(text);
    } catch (Error const& e) {
        damaged(fmt::format("its {} is unusable: {}", checkpoint_index_file, e.what()));
    }
    // The marker names the step it completes.
    std::uintmax_t const marker_bytes = fs::file_size(folder_ / checkpoint_complete_file, error);
    if (!error && marker_bytes > checkpoint_marker_max_bytes) {
        damaged(fmt::format("its {} holds {} bytes, not the marker a save writes", checkpoint_complete_file,
                            marker_bytes));
    }
    std::string const marker = read_input_file(folder_ / checkpoint_complete_file, "checkpoint marker",
                                               "the checkpoint is damaged", checkpoint_marker_max_bytes);
    if (marker != checkpoint_marker_text(index_.step)) {
        damaged(fmt::format("its {} marker reads \"{}\", but its index is of step {}", checkpoint_complete_file,
                            shown_marker_text(marker), index_.step));
    }
    // Renamed by hand: --resume latest in its folder would take it for its name's step.
    fs::path const named = folder_.has_filename() ? folder_ : folder_.parent_path();
    std::optional<std::int64_t> const step_named = named_step(named.filename().string());
    AXONN_REQUIRE(!step_named || *step_named == index_.step,
                  "checkpoint {} is named for step {} but holds step {} (renamed by hand?): give it its step's name, "
                  "{}",
                  folder_.string(), step_named.value_or(0), index_.step, checkpoint_folder_name(index_.step));
    for (ParamDecl const& spec : index_.model.architecture().declarations) {
        auto const found = index_.tensors.find(spec.name);
        if (found == index_.tensors.end()) damaged(fmt::format("it holds no tensor {}", spec.name));
        if (found->second.shape != spec.shape) {
            damaged(fmt::format("tensor {} has shape {}, but its model's is {}", spec.name,
                                shape_string(found->second.shape), shape_string(spec.shape)));
        }
    }
}

bool CheckpointReader::has_training_state() const {
    if (index_.run.is_null()) return false;
    for (ParamDecl const& spec : index_.model.architecture().declarations) {
        for (std::string const& name : {exp_avg_name(spec.name), exp_avg_sq_name(spec.name)}) {
            auto const found = index_.tensors.find(name);
            if (found == index_.tensors.end()) {
                damaged(fmt::format("it holds a run to resume, but not the AdamW moment {} of {}", name, spec.name));
            }
            if (found->second.shape != spec.shape) {
                damaged(fmt::format("its AdamW moment {} has shape {}, not its parameter's {}", name,
                                    fmt::join(found->second.shape, "x"), fmt::join(spec.shape, "x")));
            }
        }
    }
    return true;
}

void CheckpointReader::damaged(std::string const& problem) const {
    fail("checkpoint {} is damaged: {}; {}", folder_.string(), problem, earlier_checkpoint(folder_));
}

void CheckpointReader::verify(Communicator& world) {
    // The first problem in file order, encoded as file · 4 + problem, so that one all-reduce tells every rank.
    double first = std::numeric_limits<double>::max();
    std::vector<std::string> names;
    for (auto const& [name, stored] : index_.files) {
        std::size_t const k = names.size();
        names.push_back(name);
        if (k % static_cast<std::size_t>(world.size()) != static_cast<std::size_t>(world.rank())) continue;
        FileProblem const problem = check_file(folder_ / name, stored);
        if (problem != FileProblem::none) first = std::min(first, 4.0 * static_cast<double>(k) + static_cast<int>(problem));
    }
    world.all_reduce_min(&first, 1);
    if (first == std::numeric_limits<double>::max()) return;
    auto const code = static_cast<std::size_t>(first);
    std::string const& name = names[code / 4];
    damaged(fmt::format("file {} {}", name, describe(static_cast<FileProblem>(code % 4), index_.files.at(name))));
}

CheckpointReader::OpenFile& CheckpointReader::file(std::string const& name) {
    auto found = files_.find(name);
    if (found != files_.end()) return found->second;
    try {
        InputFile input = open_input_file(folder_ / name, "checkpoint file", "");
        SafetensorsHeader header = read_safetensors_header(input, "checkpoint file");
        OpenFile& opened = files_.emplace(name, OpenFile{std::move(input), std::move(header), {}}).first->second;
        for (SafetensorsEntry const& entry : opened.header.tensors) opened.entries.emplace(entry.name, &entry);
        return opened;
    } catch (Error const& e) {
        damaged(e.what());
    }
}

void CheckpointReader::read_range(std::string const& tensor, std::int64_t begin, std::int64_t count, float* out) {
    if (count == 0) return;
    auto const& parts = index_.tensors.at(tensor).parts;
    // The last part that starts at or before `begin`, then onwards.
    auto part = std::upper_bound(parts.begin(), parts.end(), begin,
                                 [](std::int64_t value, TensorPart const& p) { return value < p.begin; });
    AXONN_INVARIANT(part != parts.begin(), "checkpoint: no part of {} holds element {}", tensor, begin);
    for (--part; count > 0; ++part) {
        AXONN_INVARIANT(part != parts.end(), "checkpoint: the parts of {} end before element {}", tensor, begin);
        std::int64_t const offset = begin - part->begin;
        std::int64_t const take = std::min(count, part->count - offset);
        if (take <= 0) continue;
        OpenFile& open = file(part->file);
        auto const found = open.entries.find(part->name);
        SafetensorsEntry const* entry = found == open.entries.end() ? nullptr : found->second;
        if (entry == nullptr || entry->dtype != DType::f32 || entry->shape != Shape{part->count}) {
            damaged(fmt::format("file {} does not hold {} as an F32 tensor of {} elements", part->file, part->name,
                                part->count));
        }
        read_exactly(open.input, open.header.data_start + entry->begin + static_cast<std::uint64_t>(offset) * 4, out,
                     static_cast<std::size_t>(take) * sizeof(float), "checkpoint file");
        out += take;
        begin += take;
        count -= take;
    }
}

void CheckpointReader::read_shard(std::string const& tensor, ShardLayout const& layout, int id, float* out) {
    std::int64_t const n = layout.local_numel(id);
    // Runs of consecutive serial indices, one read each.
    for (std::int64_t start = 0; start < n;) {
        std::int64_t const run = layout.serial_run(id, start);
        read_range(tensor, layout.serial_index(id, start), run, out + start);
        start += run;
    }
}

void CheckpointReader::read_local(ShardLayout const& layout, LocalBuffers const& out) {
    for (int id = 0; id < layout.count(); ++id) {
        std::string const& name = layout.param(id).name;
        auto const read = [&](std::string const& tensor, std::string_view what, std::span<float> buffer) {
            if (buffer.empty()) return;
            std::span<float> const local = buffer.subspan(layout.offset(id), layout.local_numel(id));
            read_shard(tensor, layout, id, local.data());
            if (std::all_of(local.begin(), local.end(), [](float value) { return std::isfinite(value); })) return;
            damaged(fmt::format("its {} {} holds a value that is not finite (NaN or infinite)", what, tensor));
        };
        read(name, "weight", out.params);
        read(exp_avg_name(name), "AdamW state", out.exp_avg);
        read(exp_avg_sq_name(name), "AdamW state", out.exp_avg_sq);
        // A replicated tensor touches every writer's files: a rank of a large job closes them as it goes rather
        // than holding one descriptor per file of the checkpoint.
        files_.clear();
    }
}

Tensor CheckpointReader::read_tensor(std::string const& name) {
    auto const found = index_.tensors.find(name);
    if (found == index_.tensors.end()) damaged(fmt::format("it holds no tensor {}", name));
    Tensor tensor(found->second.shape, DType::f32);
    read_range(name, 0, tensor.numel(), tensor.data<float>());
    return tensor;
}

}  // namespace axonn
