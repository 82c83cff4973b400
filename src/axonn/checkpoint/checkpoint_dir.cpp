#include "axonn/checkpoint/checkpoint_dir.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace axonn {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view step_prefix = "step_";
constexpr std::string_view partial_suffix = ".partial";

// The step of a folder named step_NNNNNNNN, if it is one.
std::optional<std::int64_t> folder_step(std::string const& name) {
    if (name.rfind(step_prefix, 0) != 0 || name.size() == step_prefix.size()) return std::nullopt;
    std::int64_t step = -1;
    char const* const end = name.data() + name.size();
    auto const [stop, error] = std::from_chars(name.data() + step_prefix.size(), end, step);
    if (error != std::errc() || stop != end || step < 0) return std::nullopt;
    return step;
}

bool is_complete(fs::path const& folder) {
    std::error_code error;
    return fs::is_regular_file(folder / checkpoint_complete_file, error);
}

// The newest complete checkpoint in `dir`, named for an error message: "(the newest complete one is ...)".
std::string alternatives(fs::path const& dir) {
    auto const all = complete_checkpoints(dir);
    if (all.empty()) return fmt::format("{} holds no complete checkpoint", dir.string());
    return fmt::format("the newest complete checkpoint is {}", all.back().path.string());
}

}  // namespace

std::string checkpoint_folder_name(std::int64_t step) { return fmt::format("step_{:08}", step); }

std::vector<CheckpointEntry> complete_checkpoints(fs::path const& dir) {
    std::vector<CheckpointEntry> found;
    std::error_code error;
    if (!fs::is_directory(dir, error)) return found;
    for (auto const& entry : fs::directory_iterator(dir, error)) {
        auto const step = folder_step(entry.path().filename().string());
        if (step && entry.is_directory(error) && is_complete(entry.path())) found.push_back({*step, entry.path()});
    }
    std::sort(found.begin(), found.end(), [](auto const& a, auto const& b) { return a.step < b.step; });
    return found;
}

fs::path resolve_checkpoint(std::string const& spec, fs::path const& ckpt_dir) {
    if (spec == "latest") {
        require(!ckpt_dir.empty(), "--resume latest looks in --ckpt-dir: pass --ckpt-dir DIR, or --resume PATH");
        auto const all = complete_checkpoints(ckpt_dir);
        require(!all.empty(), "--resume latest: {} holds no complete checkpoint: start without --resume, or name one "
                "with --resume PATH", ckpt_dir.string());
        return all.back().path;
    }
    fs::path const path(spec);
    if (auto const problem = path_problem(path)) fail("checkpoint {} {}: check --resume", spec, *problem);
    std::error_code error;
    if (fs::exists(path / checkpoint_index_file, error)) {
        require(is_complete(path), "checkpoint {} is incomplete (its save was interrupted): {}", spec,
                alternatives(path.parent_path()));
        return path;
    }
    auto const all = complete_checkpoints(path);
    require(!all.empty(), "{} is neither a checkpoint (no {}) nor a folder of checkpoints: check --resume", spec,
            checkpoint_index_file);
    return all.back().path;
}

void prune_checkpoints(fs::path const& dir, int keep) {
    std::error_code error;
    for (auto const& entry : fs::directory_iterator(dir, error)) {
        std::string const name = entry.path().filename().string();
        bool const interrupted = name.size() > partial_suffix.size() &&
                                 name.ends_with(partial_suffix) &&
                                 folder_step(name.substr(0, name.size() - partial_suffix.size()));
        if (interrupted) fs::remove_all(entry.path(), error);
    }
    if (keep <= 0) return;
    auto const all = complete_checkpoints(dir);
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < all.size(); ++i) {
        // The marker first: a removal that a crash interrupts leaves an incomplete folder, never a damaged
        // "complete" one.
        fs::remove(all[i].path / checkpoint_complete_file, error);
        fs::remove_all(all[i].path, error);
    }
}

}  // namespace axonn
