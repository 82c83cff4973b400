// The checkpoints of a run, side by side in its --ckpt-dir:
//
//   CKPT_DIR/step_00000300/          a complete checkpoint: index.json, rank*.safetensors, and COMPLETE, which is
//                                    written last: a folder without it is not a checkpoint
//   CKPT_DIR/step_00000400.partial/  a save in progress, or one a crash interrupted (never read, removed later)
//   CKPT_DIR/step_00000200.pruned/   a checkpoint being removed by --keep, renamed aside first (never read; one a
//                                    crash interrupted is removed by the next pruning)
//
// A save fills the .partial folder, flushes every file, renames the folder into place, flushes the parent, and
// only then writes COMPLETE: whatever moment a crash strikes, the newest complete checkpoint is whole.
#pragma once

#include "axonn/core/file_io.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace axonn {

inline constexpr char const* checkpoint_index_file = "index.json";
inline constexpr char const* checkpoint_complete_file = "COMPLETE";
// The most a COMPLETE marker holds ("step N\n"): a longer one is no marker, and is read no further.
inline constexpr std::size_t checkpoint_marker_max_bytes = 64;
// index.json is small; a larger one is not an index.
inline constexpr std::uint64_t max_checkpoint_index_bytes = std::uint64_t{1} << 28;
inline constexpr char const* checkpoint_lock_file = ".lock";  // in the --ckpt-dir itself: CheckpointDirLock

// "step_00000300".
std::string checkpoint_folder_name(std::int64_t step);

// What COMPLETE holds: "step 300\n", the step it completes.
std::string checkpoint_marker_text(std::int64_t step);

// A COMPLETE marker's text as a message shows it: all of it but the line end a marker ends with, a byte that is
// not printable ASCII (another line end too: "step 4\nstep 4" is not "step 4") as '?'.
std::string shown_marker_text(std::string const& marker);

struct CheckpointEntry {
    std::int64_t step;
    std::filesystem::path path;
};

// The step of a folder named as a checkpoint (step_NNNNNNNN), if it is one.
std::optional<std::int64_t> folder_step(std::string const& name);

// The step a complete checkpoint's folder name gives: step_N's, or step_N.rolled-back-TIME's (set aside by a
// rollback), if it is one of those.
std::optional<std::int64_t> named_step(std::string const& name);

// The mark a rollback gave a checkpoint it set aside (".rolled-back-TIME" and any "-N" after it, from
// step_N.rolled-back-TIME's name: the mark of the logs it copied then); "" for any other name.
std::string rollback_mark_of(std::string const& name);

// Whether `name` is one a checkpoint folder takes in its life: step_N, or step_N with the suffix of a save in
// progress (.partial), of one replaced or pruned (.replaced, .pruned: removed by the next save) or of one set aside
// by a rollback (.rolled-back-TIME).
bool is_checkpoint_folder_name(std::string const& name);

// The complete checkpoints in `dir`, oldest first (none if the folder does not exist).
std::vector<CheckpointEntry> complete_checkpoints(std::filesystem::path const& dir);

// What of axonn's checkpoints `dir` holds, described for a message ("the checkpoint step_00000300", "the
// checkpoint folder itself"), or nothing: a folder that also holds other output (a Hugging Face export) is
// ambiguous to read and must not be written into.
std::optional<std::string> checkpoint_content(std::filesystem::path const& dir);

// What --resume (or `option`) names: "latest" (the newest complete checkpoint in ckpt_dir), a checkpoint folder,
// or a --ckpt-dir folder (its newest). An incomplete or missing one is an axonn::Error that names the
// alternatives.
std::filesystem::path resolve_checkpoint(std::string const& spec, std::filesystem::path const& ckpt_dir,
                                         std::string_view option = "--resume");

// Renames the folder `partial` to `destination` and runs `complete` (which writes its completion marker). A
// checkpoint already at `destination` is set aside as DEST.replaced meanwhile and removed once `complete` returns;
// if the rename or `complete` fails (a full disk), it goes back in place, complete as it was, the new folder back
// to `partial`, and the error propagates.
void move_checkpoint_into_place(std::filesystem::path const& partial, std::filesystem::path const& destination,
                                std::function<void()> const& complete);

// Removes all but the newest `keep` complete checkpoints (keep = 0: none removed; never the one of step
// just_saved), each renamed aside first, and every interrupted save, replacement or removal.
void prune_checkpoints(std::filesystem::path const& dir, int keep, std::int64_t just_saved = -1);

// Refuses a checkpoint folder that another run holds (CheckpointDirLock), before any check of what it holds: that
// run's saves change it meanwhile, and its lock is the reason to give (`option` names the folder in the message).
void require_not_in_use(std::filesystem::path const& dir, std::string_view option);

// A checkpoint folder that CheckpointDirLock made, with the .lock it made there: going while the folder holds
// nothing else (a run ended by an error before its first save), it removes the lock and the levels it made, while
// the lock is still held, so that no empty checkpoint folder is left behind. Moved from, it removes nothing (and
// one assigned to takes the other's folder only: CheckpointDirLock assigns it to an empty one).
class MadeCheckpointFolder {
public:
    MadeCheckpointFolder() = default;
    MadeCheckpointFolder(std::vector<std::filesystem::path> levels, std::filesystem::path lock)
        : levels_(std::move(levels)), lock_(std::move(lock)) {}
    MadeCheckpointFolder(MadeCheckpointFolder&& other) noexcept
        : levels_(std::exchange(other.levels_, {})), lock_(std::exchange(other.lock_, {})) {}
    MadeCheckpointFolder& operator=(MadeCheckpointFolder&& other) noexcept {
        levels_ = std::exchange(other.levels_, {});
        lock_ = std::exchange(other.lock_, {});
        return *this;
    }
    ~MadeCheckpointFolder();

private:
    std::vector<std::filesystem::path> levels_;  // deepest first
    std::filesystem::path lock_;
};

// Held by rank 0 for a whole run: a second run writing into the same --ckpt-dir is an error, not two runs
// deleting each other's saves. The lock (flock on DIR/.lock) goes with the process, however it ends.
// The folder itself is held too (FolderLock), so that `export` or `prepare` into it meanwhile is refused, not
// mixed into it.
class CheckpointDirLock {
public:
    // Creates the folder if needed; `option` names it in the message (import's --out).
    explicit CheckpointDirLock(std::filesystem::path const& dir, std::string_view option = "--ckpt-dir");

private:
    // The folder's new levels and its .lock, where this made them: a run ended by a signal before its first save
    // leaves no empty checkpoint folder behind.
    ProvisionalOutputs provisional_;
    FileHandle handle_;
    std::optional<FolderLock> folder_;  // after the .lock: a second run is told the folder is in use by a run
    MadeCheckpointFolder made_;         // the last member: it goes first, with the locks still held
};

// A run that starts at `start_step` refuses a --ckpt-dir holding complete checkpoints of later steps: another
// run's, which --keep would mix with this one's and --resume latest would pick.
void require_no_later_checkpoints(std::filesystem::path const& dir, std::int64_t start_step);

// Refuses a folder named as a checkpoint (step_N) in `dir` (named by `option`: --ckpt-dir, import's --out) that
// is not one (no index.json: a user's folder, a Hugging Face export), which a save of step N or a pruning would
// delete. The writer renames a folder to its step's name only once its index.json is written, so an interrupted
// save always has one.
void require_step_folders_are_checkpoints(std::filesystem::path const& dir, std::string_view option);

// A run rolled back to an earlier checkpoint of its own --ckpt-dir (`resumed`): what it sets aside, oldest first:
// the later complete checkpoints, and one of the same step that is not `resumed` (another branch's, where `resumed`
// is a folder set aside by an earlier rollback).
std::vector<std::filesystem::path> rolled_back_checkpoints(std::filesystem::path const& dir, std::int64_t start_step,
                                                           std::filesystem::path const& resumed);

// The mark a rollback puts on the names of what it sets aside, one for all of `paths` (its checkpoints and logs):
// ".rolled-back-UNIXTIME", with "-2", "-3", ... after it where a name it would give one of them is taken (an
// earlier rollback within the same second).
std::string rollback_mark(std::vector<std::filesystem::path> const& paths);

// What a rollback sets aside under one mark: checkpoint folders renamed to their name + mark, where they are kept
// (never resumed, pruned or overwritten), and logs copied whole to their name + mark before the run cuts them. A
// rollback that cannot finish undoes what it did (undo()), so that it leaves the folder and the files as they were.
class RollbackAside {
public:
    explicit RollbackAside(std::string mark) : mark_(std::move(mark)) {}

    // Copies the file `log`; returns the copy's path. A copy cut short (a full disk) is removed, and an error.
    std::filesystem::path copy(std::filesystem::path const& log);
    // Renames the folder `checkpoint`; returns its new path.
    std::filesystem::path rename(std::filesystem::path const& checkpoint);
    // Renames the checkpoints back and removes the copies; returns what could not be put back, each named ("" if
    // nothing).
    std::string undo() noexcept;

    std::vector<std::filesystem::path> const& copies() const { return copies_; }  // those made, in order

private:
    std::string mark_;
    std::vector<std::filesystem::path> copies_;
    std::vector<std::pair<std::filesystem::path, std::filesystem::path>> renamed_;  // (checkpoint, aside)
};

}  // namespace axonn
