#include "axonn/checkpoint/checkpoint_dir.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/hf_safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace axonn {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view step_prefix = "step_";
constexpr std::string_view partial_suffix = ".partial";
constexpr std::string_view replaced_suffix = ".replaced";
constexpr std::string_view pruned_suffix = ".pruned";

// What a checkpoint's completion marker says ("step 300\n"), or "" where it has none (or it is not a small file).
std::string marker_text(fs::path const& folder) {
    std::ifstream in(folder / checkpoint_complete_file, std::ios::binary);
    std::string text(checkpoint_marker_max_bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

// Whether `marker` (a marker file's first checkpoint_marker_max_bytes) is what a save writes for some step,
// "step N\n", rather than other bytes in its place.
bool reads_as_a_marker(std::string const& marker) {
    std::string_view const prefix = "step ";
    if (!marker.starts_with(prefix) || !marker.ends_with('\n') || marker.size() <= prefix.size() + 1) return false;
    return std::all_of(marker.begin() + static_cast<std::ptrdiff_t>(prefix.size()), marker.end() - 1,
                       [](char c) { return c >= '0' && c <= '9'; });
}

std::string in_use_message(fs::path const& dir, std::string_view option) {
    return fmt::format("{} {} is in use by another run (it is locked): choose another folder, or wait for that run "
                       "to end", option, dir.string());
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

// Removes a checkpoint folder, its marker first: a removal that a crash interrupts leaves an incomplete folder,
// never a damaged "complete" one. A symbolic link (to a checkpoint kept elsewhere) is removed itself, and what it
// names is left whole.
constexpr std::string_view rolled_back_infix = ".rolled-back-";

// Whether `folder` holds a checkpoint's files alone (index.json, COMPLETE, the ranks' safetensors, and those
// being written under their name + ".partial"): a leftover of a save or a pruning cut short, which the next save
// removes, and not a folder of other files a user gave a leftover's name.
bool holds_checkpoint_files_only(fs::path const& folder) {
    std::error_code error;
    if (fs::is_symlink(folder, error)) return true;  // removing the link leaves its target alone
    for (auto const& entry : folder_entries(folder)) {
        std::string name = entry.path().filename().string();
        if (name.ends_with(partial_suffix)) name.resize(name.size() - partial_suffix.size());
        bool const rank_file = name.starts_with("rank") && name.ends_with(".safetensors");
        if (!rank_file && name != checkpoint_index_file && name != checkpoint_complete_file) return false;
    }
    return true;
}

void remove_checkpoint_folder(fs::path const& folder) {
    std::error_code error;
    if (!fs::is_symlink(folder, error)) fs::remove(folder / checkpoint_complete_file, error);
    fs::remove_all(folder, error);
}

// A complete checkpoint: renamed aside first, in one step, so that a removal cut short (a kill) leaves a leftover
// that the next pruning removes, never a half-deleted folder under a checkpoint's name.
void prune_checkpoint(fs::path const& folder) {
    fs::path aside = folder;
    aside += pruned_suffix;
    std::error_code error;
    if (fs::exists(aside, error)) remove_checkpoint_folder(aside);  // an earlier pruning's, cut short
    fs::rename(folder, aside, error);
    remove_checkpoint_folder(error ? folder : aside);
}

}  // namespace

std::string checkpoint_folder_name(std::int64_t step) { return fmt::format("step_{:08}", step); }

std::string checkpoint_marker_text(std::int64_t step) { return fmt::format("step {}\n", step); }

std::string shown_marker_text(std::string const& marker) {
    std::string line = marker.ends_with('\n') ? marker.substr(0, marker.size() - 1) : marker;
    for (char& c : line) {
        if (c < 0x20 || c > 0x7e) c = '?';
    }
    return line;
}

std::optional<std::int64_t> folder_step(std::string const& name) {
    if (name.rfind(step_prefix, 0) != 0 || name.size() == step_prefix.size()) return std::nullopt;
    std::int64_t step = -1;
    char const* const end = name.data() + name.size();
    auto const [stop, error] = std::from_chars(name.data() + step_prefix.size(), end, step);
    if (error != std::errc() || stop != end || step < 0) return std::nullopt;
    return step;
}

std::optional<std::int64_t> named_step(std::string const& name) {
    std::size_t const infix = name.find(rolled_back_infix);
    return folder_step(infix == std::string::npos ? name : name.substr(0, infix));
}

std::string rollback_mark_of(std::string const& name) {
    std::size_t const infix = name.find(rolled_back_infix);
    if (infix == std::string::npos || !folder_step(name.substr(0, infix))) return std::string();
    return name.substr(infix);
}

bool is_checkpoint_folder_name(std::string const& name) {
    if (named_step(name)) return true;
    for (std::string_view suffix : {partial_suffix, replaced_suffix, pruned_suffix}) {
        if (name.ends_with(suffix) && folder_step(name.substr(0, name.size() - suffix.size()))) return true;
    }
    return false;
}

std::vector<CheckpointEntry> complete_checkpoints(fs::path const& dir) {
    std::vector<CheckpointEntry> found;
    std::error_code error;
    if (!fs::is_directory(dir, error)) return found;
    for (auto const& entry : folder_entries(dir)) {
        auto const step = folder_step(entry.path().filename().string());
        if (step && entry.is_directory(error) && is_complete(entry.path())) found.push_back({*step, entry.path()});
    }
    std::sort(found.begin(), found.end(), [](auto const& a, auto const& b) { return a.step < b.step; });
    return found;
}

std::optional<std::string> checkpoint_content(fs::path const& dir) {
    std::error_code error;
    if (fs::exists(dir / checkpoint_index_file, error) || fs::exists(dir / checkpoint_complete_file, error)) {
        return "a checkpoint's own files";
    }
    if (!fs::is_directory(dir, error)) return std::nullopt;
    for (auto const& entry : folder_entries(dir)) {
        std::string const name = entry.path().filename().string();
        if (folder_step(name) && entry.is_directory(error)) return "the checkpoint " + name;
    }
    return std::nullopt;
}

fs::path resolve_checkpoint(std::string const& spec, fs::path const& ckpt_dir, std::string_view option) {
    if (spec == "latest") {
        AXONN_REQUIRE(!ckpt_dir.empty(), "{} latest looks in --ckpt-dir: pass --ckpt-dir DIR, or {} PATH", option,
                      option);
        auto const all = complete_checkpoints(ckpt_dir);
        AXONN_REQUIRE(!all.empty(), "{} latest: {} holds no complete checkpoint: name one with {} PATH", option,
                      ckpt_dir.string(), option);
        return all.back().path;
    }
    fs::path const path(spec);
    if (auto const problem = path_problem(path)) fail("checkpoint {} {}: check {}", spec, *problem, option);
    std::error_code error;
    if (fs::exists(path / checkpoint_index_file, error)) {
        AXONN_REQUIRE(is_complete(path), "checkpoint {} is incomplete (its save was interrupted): {}", spec,
                      alternatives(path.parent_path()));
        return path;
    }
    auto const all = complete_checkpoints(path);
    if (all.empty()) {
        // A folder of checkpoints whose saves were all interrupted is named as such, not as no checkpoint folder.
        if (auto const content = checkpoint_content(path)) {
            fail("{} holds no complete checkpoint ({} is incomplete: its save was interrupted): check {}", spec,
                 *content, option);
        }
        AXONN_REQUIRE(!is_hf_model_folder(path),
                      "{} is a Hugging Face model folder, not a checkpoint: start a run from its weights with "
                      "--init-from, or make it a checkpoint with `axonn import`; check {}",
                      spec, option);
        require_hf_weights_beside_config(path);
        fail("{} is neither a checkpoint (no {}) nor a folder of checkpoints: check {}", spec, checkpoint_index_file,
             option);
    }
    return all.back().path;
}

void move_checkpoint_into_place(fs::path const& partial, fs::path const& destination,
                                std::function<void()> const& complete) {
    std::error_code error;
    fs::path replaced = destination;
    replaced += ".replaced";
    fs::remove_all(replaced, error);
    bool const replacing = fs::exists(destination, error);
    if (replacing) fs::rename(destination, replaced);
    try {
        fs::rename(partial, destination);
        sync_folder(destination.parent_path());
        complete();
    } catch (...) {
        // An import --overwrite that failed left the user's earlier import under the .replaced name, and an
        // incomplete one in its place, without a word.
        if (replacing) {
            if (fs::exists(destination, error)) fs::rename(destination, partial, error);
            fs::rename(replaced, destination, error);
        }
        throw;
    }
    if (replacing) {
        fs::remove(replaced / checkpoint_complete_file, error);  // first: never a complete checkpoint half removed
        fs::remove_all(replaced, error);
    }
}

void prune_checkpoints(fs::path const& dir, int keep, std::int64_t just_saved) {
    for (auto const& entry : folder_entries(dir)) {
        std::string const name = entry.path().filename().string();
        for (std::string_view suffix : {partial_suffix, replaced_suffix, pruned_suffix}) {
            bool const leftover = name.size() > suffix.size() && name.ends_with(suffix) &&
                                  folder_step(name.substr(0, name.size() - suffix.size())) &&
                                  holds_checkpoint_files_only(entry.path());
            if (leftover) remove_checkpoint_folder(entry.path());
        }
    }
    if (keep <= 0) return;
    auto const all = complete_checkpoints(dir);
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < all.size(); ++i) {
        if (all[i].step != just_saved) prune_checkpoint(all[i].path);
    }
}

MadeCheckpointFolder::~MadeCheckpointFolder() {
    if (levels_.empty() || lock_.empty()) return;
    std::error_code error;
    for (fs::directory_iterator entry(levels_.front(), error); !error && entry != fs::directory_iterator();
         entry.increment(error)) {
        if (entry->path().filename() != lock_.filename()) return;  // a save began: the folder is the run's
    }
    if (error || !fs::remove(lock_, error)) return;
    for (fs::path const& level : levels_) {
        if (!fs::remove(level, error)) break;  // not empty: it, and the levels above it, stay
    }
}

CheckpointDirLock::CheckpointDirLock(fs::path const& dir, std::string_view option) {
    std::vector<fs::path> levels = provisional_.create_folder(dir, "checkpoint folder");
    fs::path const path = dir / checkpoint_lock_file;
    handle_ = FileHandle(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    bool const lock_made = handle_.is_open();
    if (lock_made) provisional_.add_file(path);  // made here: with the folder, if nothing else comes
    if (!handle_.is_open() && errno == EEXIST) handle_ = FileHandle(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    AXONN_REQUIRE(handle_.is_open(), "cannot create {} to lock the checkpoint folder: {}", path.string(),
                  std::strerror(errno));
    if (::flock(handle_.get(), LOCK_EX | LOCK_NB) != 0) throw Error(in_use_message(dir, option));
    folder_.emplace(dir, "checkpoint folder");
    if (lock_made) made_ = MadeCheckpointFolder(std::move(levels), path);
}

void require_not_in_use(fs::path const& dir, std::string_view option) {
    if (locked_by_another(dir / checkpoint_lock_file)) throw Error(in_use_message(dir, option));
}

std::vector<fs::path> rolled_back_checkpoints(fs::path const& dir, std::int64_t start_step, fs::path const& resumed) {
    std::vector<fs::path> later;
    for (CheckpointEntry const& entry : complete_checkpoints(dir)) {
        std::error_code same;
        bool const other_branch = entry.step == start_step && !fs::equivalent(entry.path, resumed, same);
        if (entry.step > start_step || other_branch) later.push_back(entry.path);
    }
    return later;
}

std::string rollback_mark(std::vector<fs::path> const& paths) {
    auto const now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::string const first = fmt::format("{}{}", rolled_back_infix, now);
    auto const taken = [&](std::string const& mark) {
        return std::any_of(paths.begin(), paths.end(), [&](fs::path const& path) {
            std::error_code error;
            return fs::exists(fs::symlink_status(path.string() + mark, error));
        });
    };
    std::string mark = first;
    for (int n = 2; taken(mark); ++n) mark = fmt::format("{}-{}", first, n);
    return mark;
}

fs::path RollbackAside::copy(fs::path const& log) {
    fs::path const aside = log.string() + mark_;
    try {
        std::error_code error;
        AXONN_REQUIRE(!fs::exists(fs::symlink_status(aside, error)), "the name {} is taken", aside.string());
        InputFile const source = open_input_file(log, "log", "name another file");
        // Written as any output is: a copy cut short (a full disk) leaves no file that looks whole.
        AtomicFile copy(aside, "the copy", ExistingDestination::keep);
        std::vector<char> buffer(std::size_t{1} << 20);
        for (;;) {
            ssize_t const count = ::read(source.handle.get(), buffer.data(), buffer.size());
            if (count < 0 && errno == EINTR) continue;
            AXONN_REQUIRE(count >= 0, "cannot read it: {}", std::strerror(errno));
            if (count == 0) break;
            copy.write(buffer.data(), static_cast<std::size_t>(count));
        }
        copy.commit();
    } catch (Error const& e) {
        // Each reason names the file it is about (the copy or the log), so this line names only the log.
        fail("cannot set the later records of {} aside: {}", log.string(), e.what());
    }
    copies_.push_back(aside);
    return aside;
}

fs::path RollbackAside::rename(fs::path const& checkpoint) {
    fs::path const aside = checkpoint.string() + mark_;
    std::error_code error;
    AXONN_REQUIRE(!fs::exists(fs::symlink_status(aside, error)), "cannot set {} aside as {}: that name is taken",
                  checkpoint.string(), aside.string());
    fs::rename(checkpoint, aside, error);
    AXONN_REQUIRE(!error, "cannot set {} aside as {}: {}", checkpoint.string(), aside.string(), error.message());
    renamed_.emplace_back(checkpoint, aside);
    return aside;
}

std::string RollbackAside::undo() noexcept {
    std::vector<std::string> left;
    std::error_code error;
    for (auto it = renamed_.rbegin(); it != renamed_.rend(); ++it) {
        fs::rename(it->second, it->first, error);
        if (error) left.push_back(fmt::format("{} (still {})", it->first.string(), it->second.filename().string()));
    }
    for (fs::path const& copy : copies_) {
        fs::remove(copy, error);
        if (error) left.push_back(fmt::format("the copy {}", copy.string()));
    }
    renamed_.clear();
    copies_.clear();
    return fmt::format("{}", fmt::join(left, ", "));
}

void require_step_folders_are_checkpoints(fs::path const& dir, std::string_view option) {
    std::error_code error;
    if (!fs::is_directory(dir, error)) return;
    for (auto const& entry : folder_entries(dir)) {
        std::string const name = entry.path().filename().string();
        std::optional<std::int64_t> const step = folder_step(name);
        if (!step) continue;
        // A file, or a link to nothing, of a checkpoint's name: a save of that step would fail on it, or replace it.
        struct stat info {};
        if (::stat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
            fail("{} {} holds {}, which is named as a checkpoint but is {}: a save there would fail or replace it; "
                 "move it out of the folder",
                 option, dir.string(), name,
                 fs::is_symlink(entry.path(), error) ? "a symbolic link to nothing" : file_kind(info.st_mode));
        }
        AXONN_REQUIRE(fs::exists(entry.path() / checkpoint_index_file, error),
                      "{} {} holds {}, which is named as a checkpoint but is not one (no {}): a save or a pruning "
                      "there would delete it; move it out of the folder",
                      option, dir.string(), name, checkpoint_index_file);
        // Renamed by hand: --resume latest would take it for its name's step, and a rollback set aside the rest.
        std::string const marker = marker_text(entry.path());
        if (marker.empty() || marker == checkpoint_marker_text(*step)) continue;
        AXONN_REQUIRE(reads_as_a_marker(marker),
                      "{} {} holds {}, a checkpoint whose {} is not the marker a save writes (it begins \"{}\"): the "
                      "checkpoint is damaged; move it out of the folder",
                      option, dir.string(), name, checkpoint_complete_file, shown_marker_text(marker.substr(0, 40)));
        fail("{} {} holds {}, a checkpoint whose {} says \"{}\": its name and its step disagree (renamed by hand?); "
             "give it its step's name, or move it out of the folder",
             option, dir.string(), name, checkpoint_complete_file, shown_marker_text(marker));
    }
}

void require_no_later_checkpoints(fs::path const& dir, std::int64_t start_step) {
    auto const all = complete_checkpoints(dir);
    if (all.empty() || all.back().step <= start_step) return;
    fail("--ckpt-dir {} holds checkpoints of later steps than this run starts from (step {}), up to {}: they belong "
         "to another run, which this one would mix with; continue that run with --resume latest, or choose another "
         "--ckpt-dir", dir.string(), start_step, all.back().path.string());
}

}  // namespace axonn
