#include "axonn/train/output_kinds.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_index.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/hf_safetensors.h"
#include "axonn/io/safetensors.h"
#include "axonn/io/token_shard.h"
#include "axonn/perf/machine_profile.h"
#include "axonn/train/data_loader.h"
#include "axonn/train/grid_file.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string_view described(OutputKind kind) {
    switch (kind) {
        case OutputKind::checkpoints: return "checkpoints";
        case OutputKind::hf_model: return "a Hugging Face model";
        case OutputKind::token_shards: return "token shards";
        case OutputKind::other: break;
    }
    return "this command's files";
}

// The first file of `folder` that belongs to a kind other than `own`, described ("token shards (train.bin)").
std::optional<std::string> foreign_content(fs::path const& folder, OutputKind own) {
    std::error_code error;
    if (own != OutputKind::checkpoints) {
        if (auto const checkpoints = checkpoint_content(folder)) return "axonn checkpoints (" + *checkpoints + ")";
    }
    if (own != OutputKind::hf_model && has_hf_weights(folder)) {
        return fmt::format("a Hugging Face model ({})", fs::exists(folder / hf_weights_file, error)
                                                            ? hf_weights_file
                                                            : hf_weights_index_file);
    }
    if (own != OutputKind::token_shards) {
        for (char const* shard : {training_shard_name, validation_shard_name}) {
            if (fs::exists(folder / shard, error)) return fmt::format("token shards ({})", shard);
        }
    }
    return std::nullopt;
}

// The largest JSON file read to tell what it is: a checkpoint's index or a model's config is far smaller.
constexpr std::uint64_t max_sniffed_json_bytes = std::uint64_t{16} << 20;
// The largest file read as a grid file or a machine profile (each is a few KiB).
constexpr std::uintmax_t max_sniffed_tuning_bytes = 1 << 20;

// What of axonn's tuning the regular file at `path` holds, told by its contents: a grid file (JSON whose format is
// the grid file's) or a machine profile (a TOML file the planner loads whole).
TuningFile tuning_contents(fs::path const& path) {
    std::error_code error;
    if (!fs::is_regular_file(path, error) || fs::file_size(path, error) > max_sniffed_tuning_bytes || error) {
        return TuningFile::none;
    }
    try {  // a file this process cannot read is none of them: the write that follows says what is wrong
        std::string const text = read_input_file(path, "output", "", max_sniffed_tuning_bytes);
        if (text.starts_with('{')) {
            json const document = json::parse(text, nullptr, false);
            bool const grid = document.is_object() && document.value("format", json()) == grid_file_format;
            return grid ? TuningFile::grid_file : TuningFile::none;
        }
        load_machine_profile(fs::absolute(path).string());  // a path, never a profile's name
        return TuningFile::machine_profile;
    } catch (Error const&) {
        return TuningFile::none;
    }
}

std::string_view described(TuningFile kind) {
    return kind == TuningFile::grid_file ? "a grid file from `axonn tune`" : "a machine profile";
}

// What the regular file at `path` holds of a model's or data's, told by its contents (so that a link of any kind,
// or a copy, is known too), for a message; or nothing.
std::optional<std::string> model_or_data_contents(fs::path const& path) {
    std::error_code error;
    if (!fs::is_regular_file(path, error)) return std::nullopt;
    std::uintmax_t const size = fs::file_size(path, error);
    if (error) return std::nullopt;
    std::array<char, 16> start{};
    {
        FileHandle const file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
        if (!file.is_open() || ::pread(file.get(), start.data(), start.size(), 0) < 9) return std::nullopt;
    }
    if (starts_with_token_shard_magic(start.data())) return "a token shard";
    std::uint64_t header_bytes = 0;  // safetensors: the header's length, then the header, a JSON object
    std::memcpy(&header_bytes, start.data(), sizeof header_bytes);
    if (start[8] == '{' && header_bytes >= 2 && header_bytes <= safetensors_max_header_bytes &&
        header_bytes + 8 <= size) {
        return "model weights (safetensors)";
    }
    if (start[0] != '{' || size > max_sniffed_json_bytes) return std::nullopt;
    json const document = json::parse(read_input_file(path, "output", "", max_sniffed_json_bytes), nullptr, false);
    if (!document.is_object()) return std::nullopt;
    if (document.value("format", json()) == checkpoint_index_format) return "a checkpoint's index";
    if (document.contains("model_type")) return "a Hugging Face model's config";
    return std::nullopt;
}

// `path` itself or the nearest folder above it (links and `..` resolved) that is a checkpoint (it holds index.json
// or COMPLETE), or nothing.
std::optional<fs::path> enclosing_checkpoint(fs::path const& path) {
    std::error_code error;
    for (fs::path folder = resolved(path); !folder.empty(); folder = folder.parent_path()) {
        if (fs::exists(folder / checkpoint_index_file, error) || fs::exists(folder / checkpoint_complete_file, error)) {
            return folder;
        }
        if (folder == folder.parent_path()) break;
    }
    return std::nullopt;
}

void require_outside_checkpoints(fs::path const& path, std::string_view option) {
    if (auto const checkpoint = enclosing_checkpoint(path)) {
        fail("{} {} {} the checkpoint {}: a --keep pruning would delete it, and writing there could damage "
             "the checkpoint; choose a path outside it",
             option, path.string(), *checkpoint == resolved(path) ? "is" : "lies inside", checkpoint->string());
    }
}

// An output folder named as a checkpoint (step_N, or one in another state: step_N.partial, ...) beside
// checkpoints: a run on that --ckpt-dir would refuse the folder, which is no checkpoint of its (`export ck/step_2
// ck/step_9` blocked every later save and resume of ck), or remove it as a save's leftover.
void require_not_named_among_checkpoints(fs::path const& folder, std::string_view option) {
    fs::path const named = folder.has_filename() ? folder : folder.parent_path();  // "ck/step_9/" too
    if (!is_checkpoint_folder_name(named.filename().string())) return;
    fs::path const parent = named.has_parent_path() ? named.parent_path() : fs::path(".");
    if (auto const checkpoints = checkpoint_content(parent)) {
        fail("{} {} is named as a checkpoint folder, beside {} in {}: a training run on that --ckpt-dir would take "
             "it for one of its own; "
             "choose another name or folder",
             option, folder.string(), *checkpoints, parent.string());
    }
}

}  // namespace

void require_folder_for(fs::path const& folder, std::string_view option, OutputKind own) {
    require_outside_checkpoints(folder, option);
    require_not_named_among_checkpoints(folder, option);
    std::error_code error;
    if (!fs::is_directory(folder, error)) return;
    if (auto const found = foreign_content(folder, own)) {
        fail("{} {} holds {}: {} written there would be mixed with them; choose a folder of its own", option,
             folder.string(), *found, described(own));
    }
}

void require_apart_from_models_and_data(fs::path const& file, std::string_view option, TuningFile own) {
    require_outside_checkpoints(file, option);
    // The lock a training run holds on its --ckpt-dir (named, or through a link): replaced, a second run would no
    // longer find it held.
    fs::path const target = resolved(file);
    if (target.filename() == checkpoint_lock_file && checkpoint_content(target.parent_path())) {
        fail("{} {} is the lock of the checkpoint folder {}: choose another path", option, file.string(),
             target.parent_path().string());
    }
    if (auto const kind = model_or_data_contents(file)) {
        fail("{} {} is {}: writing it would destroy it, --overwrite or not; choose another path", option,
             file.string(), *kind);
    }
    if (TuningFile const tuning = tuning_contents(file); tuning != TuningFile::none && tuning != own) {
        fail("{} {} is {}: writing it would destroy it, --overwrite or not; choose another path", option,
             file.string(), described(tuning));
    }
}

void require_output_file(fs::path const& file, std::string_view option, std::string_view what, bool overwrite,
                         std::vector<fs::path> const& inputs, TuningFile own) {
    require_not_an_input(file, option, inputs);
    require_apart_from_models_and_data(file, option, own);
    require_replaceable_output(file, what, overwrite);
}

}  // namespace axonn
