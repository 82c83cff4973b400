// Files in and out, so that no input can hang or crash the program and no write can fail unnoticed.
//   - Inputs open without blocking (a FIFO would block open(2) forever) and must be regular files; a folder, a
//     FIFO, a device or a symbolic-link loop is named as what it is.
//   - Every write is checked: a full disk, a quota or `ulimit -f` ends the program with a one-line error on the
//     first write that fails, never a torn file and exit status 0.
//   - Whole files (shards, profiles, texts) are written atomically: beside their destination, flushed to disk,
//     then renamed into place, so a reader sees the old file or the new one, never part of one.
//   - Logs that grow during a run (metrics) belong to one run: an exclusive lock, and an earlier run's file is
//     kept unless the user asks to overwrite it.
// `what` names the file in messages: "token shard", "config file", "metrics file".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <utility>
#include <vector>

namespace axonn {

// An open file descriptor, closed with this object.
class FileHandle {
public:
    FileHandle() = default;
    explicit FileHandle(int fd) : fd_(fd) {}
    FileHandle(FileHandle&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    FileHandle& operator=(FileHandle&& other) noexcept;
    FileHandle(FileHandle const&) = delete;
    FileHandle& operator=(FileHandle const&) = delete;
    ~FileHandle();

    int get() const { return fd_; }
    bool is_open() const { return fd_ >= 0; }
    void close();  // ignores errors: for files only read, abandoned, or flushed with fsync(2) already

private:
    int fd_ = -1;
};

// The fewest file descriptors a command starts with: Open MPI's start-up alone takes about a dozen (below that it
// crashed inside MPI_Init, with a segmentation fault or its own abort), and a run's lock, metrics, data and
// checkpoint files come on top.
constexpr int least_file_descriptors = 64;

// Refuses a process limit of open files below least_file_descriptors, naming it and the fix: for main, before MPI
// starts.
void require_enough_file_descriptors();

// A regular file open for reading, with the fstat of the moment it was opened.
struct InputFile {
    FileHandle handle;
    struct stat info;
    std::filesystem::path path;
};

// Opens `path` for reading. Anything but a regular file (or a path that cannot be opened) is an axonn::Error:
// "<what> <path> <problem>: <hint>", where the problem says what the path is ("does not exist", "is a folder",
// "is a FIFO (named pipe)", ...).
InputFile open_input_file(std::filesystem::path const& path, std::string_view what, std::string_view hint);

// Reads a whole input file, refusing one larger than max_bytes. Reads to the end of the file, whatever its
// reported size.
std::string read_input_file(std::filesystem::path const& path, std::string_view what, std::string_view hint,
                            std::uint64_t max_bytes);

// Reads `count` bytes at `offset` into `out`; a short read (the file shrank) is an axonn::Error.
void read_exactly(InputFile const& file, std::uint64_t offset, void* out, std::size_t count, std::string_view what);

// "a folder", "a FIFO (named pipe)", "a character device", ... for a file mode that is not a regular file.
std::string file_kind(mode_t mode);

// Why `path` cannot be looked at ("does not exist", "is a loop of symbolic links", "cannot be opened (permission
// denied)", ...), or nothing when it can.
std::optional<std::string> path_problem(std::filesystem::path const& path);

// Writes all `count` bytes, retrying short writes; a failure is an axonn::Error naming the file and the cause
// ("the disk is full", "the file size limit (ulimit -f) is reached", ...).
void write_all(int fd, void const* data, std::size_t count, std::filesystem::path const& path, std::string_view what);

// The entries of `folder`, in no order; none where it does not exist or is not a folder. A folder that cannot be
// read is an axonn::Error saying why (out of file descriptors: the limit), not an empty folder: read as one, a
// checkpoint folder was called "neither a checkpoint nor a folder of checkpoints".
std::vector<std::filesystem::directory_entry> folder_entries(std::filesystem::path const& folder);

// Flushes a folder's entries (files created, renamed or removed in it) to disk; best effort.
void sync_folder(std::filesystem::path const& folder);

// Creates `folder` and its parents; a path component that is a file, or no permission, is an axonn::Error.
void create_folder(std::filesystem::path const& folder, std::string_view what);

// For a signal handler that ends the program (it only reads fixed memory and calls lstat(2), unlink(2) and
// rmdir(2)), so that an interrupted command leaves nothing half-written or empty behind: removes the partial files
// of every AtomicFile not yet committed or destroyed, and the outputs of every ProvisionalOutputs that are still
// empty (files of no bytes, folders of no entries).
void remove_unfinished_outputs() noexcept;

// Outputs this process has just made, a new file or the new levels of a folder's path, which hold nothing yet: a
// signal that ends the process while the object lives removes those still empty (remove_unfinished_outputs). A
// run stopped by Ctrl-C in its first second leaves no empty metrics file or checkpoint folder behind. Going, or
// released, it leaves the outputs as they are.
class ProvisionalOutputs {
public:
    ProvisionalOutputs() = default;
    ProvisionalOutputs(ProvisionalOutputs&& other) noexcept : slots_(std::exchange(other.slots_, {})) {}
    ProvisionalOutputs& operator=(ProvisionalOutputs&& other) noexcept {
        if (this != &other) {
            release();
            slots_ = std::exchange(other.slots_, {});
        }
        return *this;
    }
    ~ProvisionalOutputs() { release(); }

    void add_file(std::filesystem::path const& file);
    // Creates `folder` (create_folder) and adds the levels of its path that this made; returns them, the deepest
    // first.
    std::vector<std::filesystem::path> create_folder(std::filesystem::path const& folder, std::string_view what);
    void release();

private:
    std::vector<int> slots_;  // -1 where no slot was free
};

// An output folder made (create_folder) before work that may yet be refused: unless kept, the levels of the path it
// made are removed again while they are empty, so that a refused command leaves nothing behind (and so does a
// signal that ends it: ProvisionalOutputs).
class MadeFolder {
public:
    MadeFolder(std::filesystem::path const& folder, std::string_view what);
    MadeFolder(MadeFolder const&) = delete;
    MadeFolder& operator=(MadeFolder const&) = delete;
    ~MadeFolder();
    // The work is done: the folder stays.
    void keep() {
        made_.clear();
        provisional_.release();
    }

private:
    ProvisionalOutputs provisional_;
    std::vector<std::filesystem::path> made_;  // the levels this made, deepest first
};

// A folder this process alone writes outputs into, while the object lives: an exclusive flock(2) on the folder
// itself (nothing is written into it). Two commands writing the same new output could both pass its checks before
// either wrote, and the second replaced the first's files without --overwrite; with the folder held, the second
// either finds it held or, once the first is done, its output there. A filesystem without such locks holds nothing.
class FolderLock {
public:
    FolderLock(std::filesystem::path const& folder, std::string_view what);

private:
    FileHandle handle_;
};

// What a run that writes its results into `folder` checks before any work, on every rank alike: that the folder
// can be made (no part of its path is a file) and that it is new or empty, unless `overwrite` (an earlier run's
// results would be replaced); even with `overwrite`, that it holds no device, FIFO or socket, which a file written
// there would replace.
void require_new_output_folder(std::filesystem::path const& folder, std::string_view what, bool overwrite);

// What AtomicFile::commit() does with a file that appeared at its destination after the command checked the path
// (another command wrote it meanwhile): `replace` it, where the user asked to --overwrite, the file was there and
// accepted when checked, or the command holds the folder; or `keep` it and fail, naming it, so that no file the
// command did not make is replaced unasked.
enum class ExistingDestination { replace, keep };

// `replace` where the user asked to overwrite, `keep` otherwise.
constexpr ExistingDestination replaced_only_if(bool overwrite) {
    return overwrite ? ExistingDestination::replace : ExistingDestination::keep;
}

// A file written beside its destination (as "<destination>.partial") and renamed into place by commit(), after
// its data reached the disk. Destroyed without commit(), it removes the partial file, and so does a signal that
// ends the program (remove_unfinished_outputs). The partial file is always created new: one that exists already is an
// error naming it, whether another process is writing it (a second writer of the destination: an error, not a
// torn file), a killed run left it behind, or it is the user's own file or a link (never written through).
class AtomicFile {
public:
    AtomicFile(std::filesystem::path destination, std::string what,
               ExistingDestination existing = ExistingDestination::replace);
    AtomicFile(AtomicFile const&) = delete;
    AtomicFile& operator=(AtomicFile const&) = delete;
    ~AtomicFile();

    void write(void const* data, std::size_t count);
    void write(std::string_view text) { write(text.data(), text.size()); }
    // Flushes the data to disk; commit() then only renames, so several files can be written and flushed first
    // and renamed one right after the other at the end.
    void finish();
    void commit();  // finish() if not done yet, then rename into place, close, and flush the folder
    std::filesystem::path const& destination() const { return destination_; }

private:
    std::filesystem::path destination_;
    std::filesystem::path partial_;
    std::string what_;
    ExistingDestination existing_;
    FileHandle handle_;  // open, and locked, until commit() or destruction
    int slot_ = -1;      // where remove_unfinished_outputs() finds the partial file's name (-1: not there)
    bool finished_ = false;
    bool committed_ = false;
};

// Writes `contents` to `path` through an AtomicFile.
void write_file_atomically(std::filesystem::path const& path, std::string_view contents, std::string_view what,
                           ExistingDestination existing = ExistingDestination::replace);

// What an output file that already holds data gets: refused (an earlier run's file is kept), emptied, or added to
// (a resumed run continuing its own log).
enum class ExistingOutput { refuse, overwrite, append };

// A growing output file owned by one run: created if missing, locked exclusively (another run writing it is an
// error, not interleaved lines), and, if it already holds data, refused, emptied or added to (`existing`). A file
// with other names (hard links) is never emptied or first written in place, which would change what those names
// hold (a checkpoint's marker, another run's log): its name gets a new file instead.
// Every write goes straight to the operating system and is checked; a write that fails is cut off again, so the
// file keeps whole records only.
class ExclusiveOutputFile {
public:
    ExclusiveOutputFile() = default;  // writes nothing
    ExclusiveOutputFile(std::filesystem::path const& path, std::string what, ExistingOutput existing);

    bool is_open() const { return handle_.is_open(); }
    void write(std::string_view text);
    // Cuts the file (opened to append to) back to its first `size` bytes, in place: a link to it, or another name
    // of it, still names it.
    void cut_to(std::uint64_t size);

private:
    void replace_by_new_file();  // unlinks the file's name and opens a new, empty, locked file there

    std::filesystem::path path_;
    std::string what_;
    FileHandle handle_;
    bool regular_ = false;
    std::uint64_t size_ = 0;  // after the last write that succeeded
    ProvisionalOutputs provisional_;  // the file and its folders, where this made them, until the first write
};

// Refuses an output file (named by `option`) whose folder does not exist or is not a folder, for an output whose
// writer makes no folder: checked before the work, not when the file is written after it.
void require_existing_folder(std::filesystem::path const& file, std::string_view option);

// Refuses an output file's path that is a folder, naming `option` and a file in it such as `example` would be.
void require_not_a_folder(std::filesystem::path const& path, std::string_view option, std::string_view example);

// What ExclusiveOutputFile would refuse about an existing file, checked without opening it: for every rank of a
// job to check, so that the refusal is the same on all of them.
void require_writable_output(std::filesystem::path const& path, std::string_view what, bool overwrite);
// The same for an output written whole and renamed into place (AtomicFile), which would replace whatever the path
// names: also refuses an existing path that is neither a regular file nor a folder (a device such as /dev/null, a
// FIFO, a socket), even with overwrite. (A folder cannot be renamed over; callers name a file in it instead.)
void require_replaceable_output(std::filesystem::path const& path, std::string_view what, bool overwrite);

// Whether another open file (another run's metrics or checkpoint folder lock, a writer's partial file) holds the
// lock on `path`.
bool locked_by_another(std::filesystem::path const& path);

// The bytes that an unprivileged writer may still write on the file system holding `path` (or, where it does not
// exist yet, its nearest existing folder above), or nothing where that cannot be told.
std::optional<std::uint64_t> free_bytes_for(std::filesystem::path const& path);

// A size for a message: "1.5 MiB".
std::string human_bytes(double bytes);

// `path` with its links (a link to nothing too: it names its target) and `..` resolved as far as it exists, made
// absolute (as given where that fails).
std::filesystem::path resolved(std::filesystem::path const& path);

// One output of a run, for require_distinct_outputs: the option that names it, its path (which may not exist yet),
// and whether it is a folder the run writes into.
struct RunOutput {
    std::string_view option;
    std::filesystem::path path;
    bool folder = false;
};

// Refuses two outputs that are the same file (one path, links and `..` resolved, or two hard links to one file),
// and a file output inside a folder output (the run would write one
// over the other: a trace over a checkpoint's index, metrics over a trace). Outputs with an empty path are absent.
void require_distinct_outputs(std::vector<RunOutput> const& outputs);

// Refuses an input (named by `input_option`) that lies inside output folder `folder` (named by `folder_option`);
// `why` ends the message: what the run does there that could delete it.
void require_input_outside(std::filesystem::path const& input, std::string_view input_option,
                           std::filesystem::path const& folder, std::string_view folder_option, std::string_view why);

// Refuses an output path that names one of the inputs (the same file, through any path), or lies inside an input
// that is a folder (a checkpoint, a model): writing it would destroy the input while it is being read.
void require_not_an_input(std::filesystem::path const& output, std::string_view output_option,
                          std::vector<std::filesystem::path> const& inputs);

}  // namespace axonn
