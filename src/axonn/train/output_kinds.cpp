#include "axonn/train/output_kinds.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/families/hf_model.h"
#include "axonn/io/hf_safetensors.h"
#include "axonn/io/token_shard.h"
#include "axonn/train/data_loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>

namespace axonn {
namespace {

namespace fs = std::filesystem;

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

// Whether the regular file at `path` starts as a token shard does.
bool is_token_shard(fs::path const& path) {
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    std::int32_t magic = 0;
    bool const read = ::pread(fd, &magic, sizeof magic, 0) == static_cast<ssize_t>(sizeof magic);
    ::close(fd);
    return read && magic == token_shard_magic;
}

// What an existing file is of a model's or data's, for a message, or nothing.
std::optional<std::string> model_or_data_file(fs::path const& file) {
    std::error_code error;
    if (!fs::is_regular_file(file, error)) return std::nullopt;
    if (is_token_shard(file)) return "a token shard";
    if (file.extension() == ".safetensors") return "model weights";
    fs::path const folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (file.filename() == hf_config_file && is_hf_model_folder(folder)) return "a Hugging Face model's config";
    return std::nullopt;
}

}  // namespace

void require_folder_for(fs::path const& folder, std::string_view option, OutputKind own) {
    std::error_code error;
    if (!fs::is_directory(folder, error)) return;
    if (auto const found = foreign_content(folder, own)) {
        fail("{} {} holds {}: {} written there would be mixed with them; choose a folder of its own", option,
             folder.string(), *found, described(own));
    }
}

void require_apart_from_models_and_data(fs::path const& file, std::string_view option) {
    fs::path const folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code error;
    AXONN_REQUIRE(!fs::exists(folder / checkpoint_index_file, error) &&
                      !fs::exists(folder / checkpoint_complete_file, error),
                  "{} {} lies inside the checkpoint {}: a --keep pruning would delete it, and writing there could "
                  "damage the checkpoint; choose a path outside it",
                  option, file.string(), folder.string());
    if (auto const kind = model_or_data_file(file)) {
        fail("{} {} is {}: writing it would destroy it, --overwrite or not; choose another path", option,
             file.string(), *kind);
    }
}


void require_output_file(fs::path const& file, std::string_view option, std::string_view what, bool overwrite,
                         std::vector<fs::path> const& inputs) {
    require_not_an_input(file, option, inputs);
    require_apart_from_models_and_data(file, option);
    require_replaceable_output(file, what, overwrite);
}

}  // namespace axonn
