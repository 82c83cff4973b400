#include "axonn/core/file_io.h"

#include "axonn/core/error.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace axonn {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view partial_suffix = ".partial";  // AtomicFile's, after its destination's name

// Why open(2) refused a path, in words that say what to look at. `creating`: the path is an output.
std::string open_problem(int error, bool creating = false) {
    switch (error) {
        case ENOENT: return creating ? "cannot be created (its folder does not exist or takes no new files)"
                                     : "does not exist";
        case EACCES:
        case EPERM: return "cannot be opened (permission denied)";
        case ELOOP: return "is a loop of symbolic links";
        case ENOTDIR: return "has a part that is a file, not a folder";
        case ENAMETOOLONG: return "is too long a path";
        case EISDIR: return "is a folder";
        case ENXIO: return "cannot be opened for writing (a FIFO that no process reads, or a device or socket with "
                           "nothing behind it)";
        default: return fmt::format("cannot be opened ({})", std::strerror(error));
    }
}

// Too many open files is the process's limit or the system's, not the path's: the caller's hint (check the path,
// run axonn prepare, choose another) would send the user the wrong way.
void require_file_descriptors(int error, std::string_view what, fs::path const& path) {
    if (error == EMFILE) {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        fail("{} {} cannot be opened: this process has as many files open as it may (ulimit -n {}): raise the limit",
             what, path.string(), limit.rlim_cur);
    }
    AXONN_REQUIRE(error != ENFILE,
                  "{} {} cannot be opened: the system has as many files open as it may: close other programs, or "
                  "raise its limit (fs.file-max)",
                  what, path.string());
}

// Why write(2) or fsync(2) failed.
std::string write_problem(int error) {
    switch (error) {
        case ENOSPC: return "the disk is full";
        case EDQUOT: return "the disk quota is used up";
        case EFBIG: return "the file has reached the size limit (ulimit -f) or the file system's largest file";
        case EIO: return "an input/output error on the device";
        case EBADF: return "the file is not open for writing";
        default: return std::strerror(error);
    }
}

std::string with_hint(std::string_view hint) { return hint.empty() ? std::string() : ": " + std::string(hint); }

// An output opened with O_NONBLOCK (so that opening a FIFO cannot block) is written in blocking mode: a busy
// terminal must make a write wait, not fail with EAGAIN.
void make_blocking(int fd) {
    int const flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

std::string earlier_run_message(std::string_view what, fs::path const& path, off_t bytes) {
    return fmt::format("{} {} already exists ({} bytes; an earlier run's?): choose another path, or pass "
                       "--overwrite to replace it", what, path.string(), bytes);
}

}  // namespace

FileHandle& FileHandle::operator=(FileHandle&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

FileHandle::~FileHandle() { close(); }

void FileHandle::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

std::string file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::optional<std::string> path_problem(fs::path const& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) return std::nullopt;
    return open_problem(errno);
}

InputFile open_input_file(fs::path const& path, std::string_view what, std::string_view hint) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It changes nothing for
    // the regular files that pass the check below.
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        require_file_descriptors(errno, what, path);
        fail("{} {} {}{}", what, path.string(), open_problem(errno), with_hint(hint));
    }
    InputFile file{FileHandle(fd), {}, path};
    AXONN_REQUIRE(::fstat(fd, &file.info) == 0, "cannot read the status of {} {}: {}", what, path.string(),
                  std::strerror(errno));
    AXONN_REQUIRE(S_ISREG(file.info.st_mode), "{} {} is {}, not a regular file{}", what, path.string(),
                  file_kind(file.info.st_mode), with_hint(hint));
    return file;
}

std::string read_input_file(fs::path const& path, std::string_view what, std::string_view hint,
                            std::uint64_t max_bytes) {
    InputFile const file = open_input_file(path, what, hint);
    AXONN_REQUIRE(static_cast<std::uint64_t>(file.info.st_size) <= max_bytes,
                  "{} {} has {} bytes, more than the {} this program reads from such a file: check the path", what,
                  path.string(), file.info.st_size, max_bytes);
    std::string contents;
    std::array<char, 65536> chunk;
    for (;;) {
        ssize_t const n = ::read(file.handle.get(), chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        AXONN_REQUIRE(n >= 0, "cannot read {} {}: {}", what, path.string(), std::strerror(errno));
        if (n == 0) return contents;
        AXONN_REQUIRE(contents.size() + static_cast<std::size_t>(n) <= max_bytes,
                      "{} {} holds more than the {} bytes this program reads from such a file: check the path", what,
                      path.string(), max_bytes);
        contents.append(chunk.data(), static_cast<std::size_t>(n));
    }
}

void read_exactly(InputFile const& file, std::uint64_t offset, void* out, std::size_t count, std::string_view what) {
    auto* bytes = static_cast<char*>(out);
    while (count > 0) {
        ssize_t const n = ::pread(file.handle.get(), bytes, count, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        AXONN_REQUIRE(n >= 0, "cannot read {} {}: {}", what, file.path.string(), std::strerror(errno));
        AXONN_REQUIRE(n > 0, "{} {} ended early: it is shorter than it was when opened (changed by another program?)",
                      what, file.path.string());
        bytes += n;
        offset += static_cast<std::uint64_t>(n);
        count -= static_cast<std::size_t>(n);
    }
}

void write_all(int fd, void const* data, std::size_t count, fs::path const& path, std::string_view what) {
    auto const* bytes = static_cast<char const*>(data);
    while (count > 0) {
        ssize_t const n = ::write(fd, bytes, count);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("cannot write {} {}: {}", what, path.string(), write_problem(errno));
        AXONN_REQUIRE(n > 0, "cannot write {} {}: the device accepted no bytes", what, path.string());
        bytes += n;
        count -= static_cast<std::size_t>(n);
    }
}

bool locked_by_another(fs::path const& path) {
    FileHandle const file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    return file.is_open() && ::flock(file.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

namespace {

// The nearest part of `path` that exists (the folder a new file or folder would be made in), or "." for a relative
// path none of whose parts exists.
fs::path nearest_existing(fs::path const& path) {
    std::error_code error;
    for (fs::path part = path; !part.empty(); part = part.parent_path()) {
        if (fs::exists(part, error)) return part;
        if (part == part.parent_path()) break;  // the root
    }
    return ".";
}

// Why `folder` cannot be made where the nearest part of its path that exists is not a folder (a file, a device, a
// FIFO: named as what it is); empty where that part is a folder.
std::string blocked_folder_problem(fs::path const& folder) {
    fs::path const part = nearest_existing(folder);
    struct stat info {};
    if (::stat(part.c_str(), &info) != 0 || S_ISDIR(info.st_mode)) return {};
    if (S_ISREG(info.st_mode)) return "a part of that path is a file, not a folder";
    return fmt::format("a part of that path, {}, is {}, not a folder", part.string(), file_kind(info.st_mode));
}

// Why nothing can be written in folder `folder` (read-only, or no permission), or nothing.
std::optional<std::string> unwritable_folder_problem(fs::path const& folder) {
    if (::access(folder.c_str(), W_OK | X_OK) == 0) return std::nullopt;
    if (errno == EROFS) return fmt::format("{} is on a read-only file system", folder.string());
    if (errno == EACCES || errno == EPERM) return fmt::format("the folder {} cannot be written (permission denied)",
                                                              folder.string());
    return std::nullopt;  // whatever else it is, the write names it
}

// What would stop a file being made at `path`, checked before the work instead of after it: a path that ends with
// a slash (a folder's), a name longer than the file system allows (`extra_name_bytes`: what a partial file's name
// adds), a folder that cannot be written.
void require_creatable_file(fs::path const& path, std::string_view what, std::size_t extra_name_bytes) {
    std::string const& name = path.native();
    AXONN_REQUIRE(name.empty() || name.back() != '/', "{} {} ends with '/', so it names a folder: name a file (drop "
                  "the slash)", what, name);
    fs::path const folder = nearest_existing(path.has_parent_path() ? path.parent_path() : fs::path("."));
    long const longest = ::pathconf(folder.c_str(), _PC_NAME_MAX);
    std::size_t const length = path.filename().native().size();
    if (longest > 0 && length + extra_name_bytes > static_cast<std::size_t>(longest)) {
        fail("{} {}: its name has {} characters, more than the {} this file system takes{}: choose a shorter name",
             what, name, length, static_cast<std::size_t>(longest) - extra_name_bytes,
             extra_name_bytes > 0 ? " (the file is written under its name + \".partial\" first)" : "");
    }
    std::error_code error;
    if (!fs::is_directory(folder, error)) return;  // a part of the path that is a file: named where it is made
    if (auto const problem = unwritable_folder_problem(folder)) {
        fail("cannot write {} {}: {}: choose another path", what, name, *problem);
    }
}

// Why an existing `partial` file cannot be written, for a message: another writer holds it (locked), or nothing
// says whose it is (a killed run's, or the user's own file of that name), or it is not a regular file.
std::string existing_partial_problem(fs::path const& partial) {
    struct stat info {};
    if (::lstat(partial.c_str(), &info) != 0) return open_problem(errno, true);
    if (S_ISLNK(info.st_mode)) return "is a symbolic link, which this program never writes through: remove it";
    if (!S_ISREG(info.st_mode)) return fmt::format("is {}: remove it", file_kind(info.st_mode));
    if (locked_by_another(partial)) return "is locked: another process is writing it; wait for it to finish";
    return fmt::format("already exists ({} bytes): a run killed while writing leaves such a file, but it may be "
                       "yours; remove it or move it aside",
                       info.st_size);
}

fs::path partial_path(fs::path const& destination) { return destination.string() + std::string(partial_suffix); }

std::string existing_partial_message(fs::path const& destination, std::string_view what) {
    fs::path const partial = partial_path(destination);
    return fmt::format("cannot write {} {}: {}, where it is written first, {}", what, destination.string(),
                       partial.string(), existing_partial_problem(partial));
}

// rename(2) of `partial` to `destination`, which with `keep` fails with EEXIST where the destination exists, in
// the same atomic step (RENAME_NOREPLACE; a file system without it is checked just before the rename instead).
// Returns rename's result, errno set.
int move_into_place(fs::path const& partial, fs::path const& destination, ExistingDestination existing) {
    if (existing == ExistingDestination::replace) return ::rename(partial.c_str(), destination.c_str());
    int const result = ::renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, destination.c_str(), RENAME_NOREPLACE);
    if (result == 0 || (errno != EINVAL && errno != ENOSYS)) return result;
    struct stat info {};
    if (::lstat(destination.c_str(), &info) == 0) {
        errno = EEXIST;
        return -1;
    }
    return ::rename(partial.c_str(), destination.c_str());
}

// The entries an iterator of a folder (DirectoryIterator: the standard's plain or recursive one) reads until the
// end or the first error, which it leaves in `error`.
template <typename DirectoryIterator>
std::vector<fs::directory_entry> entries_read(fs::path const& folder, std::error_code& error) {
    std::vector<fs::directory_entry> entries;
    for (DirectoryIterator entry(folder, error); !error && entry != DirectoryIterator(); entry.increment(error)) {
        entries.push_back(*entry);
    }
    return entries;
}

}  // namespace

void require_enough_file_descriptors() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= static_cast<rlim_t>(least_file_descriptors)) {
        return;
    }
    fail("this process may have at most {} files open (ulimit -n {}), fewer than the {} a command needs (MPI's "
         "start-up alone takes about a dozen): raise the limit (ulimit -n 1024)",
         limit.rlim_cur, limit.rlim_cur, least_file_descriptors);
}

std::vector<fs::directory_entry> folder_entries(fs::path const& folder) {
    std::error_code error;
    std::vector<fs::directory_entry> entries = entries_read<fs::directory_iterator>(folder, error);
    if (!error || error.value() == ENOENT || error.value() == ENOTDIR) return entries;
    require_file_descriptors(error.value(), "folder", folder);
    fail("folder {} {}", folder.string(), open_problem(error.value()));
}

void create_folder(fs::path const& folder, std::string_view what) {
    if (folder.empty()) return;
    std::error_code error;
    fs::create_directories(folder, error);
    if (!error) return;
    std::string problem = error.message();
    if (error == std::errc::not_a_directory || error == std::errc::file_exists) {
        problem = blocked_folder_problem(folder);
        if (problem.empty()) problem = "a part of that path is not a folder";
    }
    fail("cannot create the folder {} for the {}: {}", folder.string(), what, problem);
}

MadeFolder::MadeFolder(fs::path const& folder, std::string_view what)
    : made_(provisional_.create_folder(folder, what)) {}

MadeFolder::~MadeFolder() {
    if (made_.empty()) return;
    // Another command's now (it made the folder too, or took it in between, and holds it: FolderLock): its
    // partial files are still to come, and removing the folder failed them both.
    FileHandle const folder(::open(made_.front().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (folder.is_open() && ::flock(folder.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) return;
    std::error_code error;
    for (fs::path const& level : made_) {
        if (!fs::remove(level, error)) break;  // not empty (or gone): it, and the levels above it, stay
    }
}

FolderLock::FolderLock(fs::path const& folder, std::string_view what)
    : handle_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    AXONN_REQUIRE(!handle_.is_open() || ::flock(handle_.get(), LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK,
                  "the {} {} is being written by another command: wait until it ends, or choose another folder", what,
                  folder.string());
}

void require_new_output_folder(fs::path const& folder, std::string_view what, bool overwrite) {
    // The nearest part of the path that exists must be a folder, where create_folder would make the rest.
    std::string const blocked = blocked_folder_problem(folder);
    AXONN_REQUIRE(blocked.empty(), "cannot create the folder {} for the {}: {}", folder.string(), what, blocked);
    if (auto const problem = unwritable_folder_problem(nearest_existing(folder))) {
        fail("cannot write the {} into {}: {}: choose another folder", what, folder.string(), *problem);
    }
    std::error_code error;
    if (!fs::is_directory(folder, error)) return;
    // Even with overwrite: the files the run writes are renamed into place, which would replace a device or a FIFO
    // of the same name; the names are the run's to choose, so anything of the kind is refused before the work.
    std::vector<fs::directory_entry> const entries = folder_entries(folder);
    for (auto const& entry : entries) {
        struct stat info {};
        if (::stat(entry.path().c_str(), &info) != 0 || S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) continue;
        fail("the folder {} for the {} holds {}, which is {}: a file this run writes there would replace it; move it "
             "out of the folder",
             folder.string(), what, entry.path().filename().string(), file_kind(info.st_mode));
    }
    if (overwrite || entries.empty()) return;
    fail("the folder {} for the {} already holds {} (from an earlier run?): choose a new or empty folder, or pass "
         "--overwrite to replace what this run writes there",
         folder.string(), what, entries.front().path().filename().string());
}

namespace {

// The outputs a signal that ends the process removes (remove_unfinished_outputs, which its handler calls), by name:
// the partial files being written, and the outputs made that may still be empty. Fixed slots of fixed size (a
// handler may not allocate or lock), each claimed and released atomically. A path that finds no free slot (more
// than kOutputSlots at once) or that does not fit is left out: best effort.
constexpr int kOutputSlots = 64;
enum SlotState : int { slot_free, slot_filling, slot_named };
enum class SlotOutput : int { partial_file, empty_file, empty_folder };
struct OutputSlot {
    std::atomic<int> state{slot_free};
    SlotOutput output = SlotOutput::partial_file;  // set before the state says slot_named
    char path[PATH_MAX];
};
OutputSlot output_slots[kOutputSlots];

int claim_output_slot(fs::path const& path, SlotOutput output) {
    std::error_code error;
    fs::path const absolute = fs::absolute(path, error);  // the handler may run after a change of folder
    std::string const& name = error ? path.native() : absolute.native();
    if (name.size() >= PATH_MAX) return -1;
    for (int slot = 0; slot < kOutputSlots; ++slot) {
        int expected = slot_free;
        if (!output_slots[slot].state.compare_exchange_strong(expected, slot_filling)) continue;
        std::memcpy(output_slots[slot].path, name.c_str(), name.size() + 1);
        output_slots[slot].output = output;
        output_slots[slot].state.store(slot_named);
        return slot;
    }
    return -1;
}

void release_output_slot(int slot) {
    if (slot >= 0) output_slots[slot].state.store(slot_free);
}

// Whether the slot names an output of this kind now.
bool names(OutputSlot const& slot, SlotOutput output) {
    return slot.state.load() == slot_named && slot.output == output;
}

}  // namespace

AtomicFile::AtomicFile(fs::path destination, std::string what, ExistingDestination existing)
    : destination_(std::move(destination)), partial_(partial_path(destination_)), what_(std::move(what)),
      existing_(existing) {
    // The rename would replace a device, a FIFO or a socket at the destination with a regular file.
    require_replaceable_output(destination_, what_, true);
    // A new file, never one that exists: not a link's target (written through, it would be replaced by whatever
    // the link names), not a file of the user's that has the partial file's name, not another writer's.
    int const fd = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) throw Error(existing_partial_message(destination_, what_));
    if (fd < 0) require_file_descriptors(errno, what_, destination_);
    if (fd < 0) fail("cannot write {} {}: {} {}", what_, destination_.string(), partial_.string(),
                     open_problem(errno, true));
    handle_ = FileHandle(fd);
    // Locked while written, so that a second writer of the destination can tell it is in use.
    ::flock(fd, LOCK_EX | LOCK_NB);
    slot_ = claim_output_slot(partial_, SlotOutput::partial_file);
}

AtomicFile::~AtomicFile() {
    release_output_slot(slot_);
    if (committed_) return;
    ::unlink(partial_.c_str());  // before the lock goes with the file: the partial file is still ours
    handle_.close();
}

void remove_unfinished_outputs() noexcept {
    for (OutputSlot const& slot : output_slots) {
        if (names(slot, SlotOutput::partial_file)) ::unlink(slot.path);
        struct stat info {};
        if (names(slot, SlotOutput::empty_file) && ::lstat(slot.path, &info) == 0 && S_ISREG(info.st_mode) &&
            info.st_size == 0) {
            ::unlink(slot.path);
        }
    }
    // Folders once their files are gone, the deepest first: each pass removes those left empty by the last.
    for (bool removed = true; removed;) {
        removed = false;
        for (OutputSlot const& slot : output_slots) {
            removed = (names(slot, SlotOutput::empty_folder) && ::rmdir(slot.path) == 0) || removed;
        }
    }
}

void ProvisionalOutputs::add_file(fs::path const& file) {
    slots_.push_back(claim_output_slot(file, SlotOutput::empty_file));
}

std::vector<fs::path> ProvisionalOutputs::create_folder(fs::path const& folder, std::string_view what) {
    std::vector<fs::path> missing;  // the levels that do not exist yet, the deepest first
    std::error_code error;
    for (fs::path level = folder; !level.empty() && !fs::exists(level, error); level = level.parent_path()) {
        missing.push_back(level);
        if (level == level.parent_path()) break;
    }
    // Added before they exist, so that a signal while they are made finds them.
    for (fs::path const& level : missing) slots_.push_back(claim_output_slot(level, SlotOutput::empty_folder));
    axonn::create_folder(folder, what);
    return missing;
}

void ProvisionalOutputs::release() {
    for (int const slot : slots_) release_output_slot(slot);
    slots_.clear();
}

void AtomicFile::write(void const* data, std::size_t count) {
    AXONN_INVARIANT(!finished_, "AtomicFile::write after finish() of {}", partial_.string());
    write_all(handle_.get(), data, count, destination_, what_);
}

void AtomicFile::finish() {
    if (finished_) return;
    if (::fsync(handle_.get()) != 0) fail("cannot write {} {}: {}", what_, destination_.string(), write_problem(errno));
    finished_ = true;
}

void AtomicFile::commit() {
    finish();
    if (move_into_place(partial_, destination_, existing_) != 0) {
        if (errno == EEXIST) {
            fail("{} {} appeared while this command ran (another command wrote it): it is kept and this command's is "
                 "not written; choose another path, or pass --overwrite to replace it", what_, destination_.string());
        }
        fail("cannot move {} into place as {}: {}", partial_.string(), destination_.string(), std::strerror(errno));
    }
    committed_ = true;
    release_output_slot(std::exchange(slot_, -1));
    handle_.close();  // the lock goes with it, now that the file is in place and no longer the partial file
    // The rename itself reaches the disk only when the folder does.
    sync_folder(destination_.has_parent_path() ? destination_.parent_path() : fs::path("."));
}

void sync_folder(fs::path const& folder) {
    FileHandle const directory(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (directory.is_open()) ::fsync(directory.get());
}

void write_file_atomically(fs::path const& path, std::string_view contents, std::string_view what,
                           ExistingDestination existing) {
    AtomicFile file(path, std::string(what), existing);
    file.write(contents);
    file.commit();
}

ExclusiveOutputFile::ExclusiveOutputFile(fs::path const& path, std::string what, ExistingOutput existing)
    : path_(path), what_(std::move(what)) {
    if (path.has_parent_path()) provisional_.create_folder(path.parent_path(), what_);
    int constexpr flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK;
    int fd = ::open(path.c_str(), flags | O_EXCL, 0644);  // made here: empty until the first write
    if (fd >= 0) provisional_.add_file(path);
    if (fd < 0 && errno == EEXIST) {
        struct stat target {};
        bool const link_to_nothing = ::stat(path.c_str(), &target) != 0 && errno == ENOENT;
        fd = ::open(path.c_str(), flags, 0644);
        if (fd >= 0 && link_to_nothing) provisional_.add_file(resolved(path));  // the link's target, made here
    }
    if (fd < 0) {
        require_file_descriptors(errno, what_, path);
        fail("{} {} {}: choose another path", what_, path.string(), open_problem(errno, true));
    }
    handle_ = FileHandle(fd);
    struct stat info {};
    AXONN_REQUIRE(::fstat(fd, &info) == 0, "cannot read the status of {} {}: {}", what_, path.string(),
                  std::strerror(errno));
    make_blocking(fd);
    if (S_ISCHR(info.st_mode)) return;  // /dev/null, a terminal: nothing to lock, keep or cut
    AXONN_REQUIRE(S_ISREG(info.st_mode), "{} {} is {}, not a regular file: choose another path", what_, path.string(),
                  file_kind(info.st_mode));
    regular_ = true;
    if (info.st_nlink > 1 && (info.st_size == 0 || existing == ExistingOutput::overwrite)) {
        replace_by_new_file();
        return;
    }
    // The lock goes with the open file, so it lasts until this process exits, however it exits.
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        AXONN_REQUIRE(errno != EWOULDBLOCK, "{} {} is being written by another run (it is locked): choose another path",
                      what_, path.string());
        fail("cannot lock {} {}: {}", what_, path.string(), std::strerror(errno));
    }
    if (info.st_size == 0) return;
    if (existing == ExistingOutput::append) {
        size_ = static_cast<std::uint64_t>(info.st_size);
        return;
    }
    if (existing == ExistingOutput::refuse) throw Error(earlier_run_message(what_, path, info.st_size));
    AXONN_REQUIRE(::ftruncate(fd, 0) == 0, "cannot empty {} {}: {}", what_, path.string(), std::strerror(errno));
}

void ExclusiveOutputFile::replace_by_new_file() {
    // Where a link names the file, its target's name is the one replaced: the link still names the output.
    fs::path const name = resolved(path_);
    AXONN_REQUIRE(::unlink(name.c_str()) == 0, "cannot replace {} {}: {}", what_, path_.string(),
                  std::strerror(errno));
    int const fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    AXONN_REQUIRE(fd >= 0, "cannot replace {} {}: {}", what_, path_.string(), std::strerror(errno));
    handle_ = FileHandle(fd);
    AXONN_REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0, "cannot lock {} {}: {}", what_, path_.string(),
                  std::strerror(errno));
}

void ExclusiveOutputFile::cut_to(std::uint64_t size) {
    if (!regular_ || size >= size_) return;
    AXONN_REQUIRE(::ftruncate(handle_.get(), static_cast<off_t>(size)) == 0, "cannot cut {} {} back: {}", what_,
                  path_.string(), std::strerror(errno));
    size_ = size;
}

void ExclusiveOutputFile::write(std::string_view text) {
    if (!handle_.is_open()) return;
    try {
        write_all(handle_.get(), text.data(), text.size(), path_, what_);
    } catch (Error const&) {
        if (regular_) {
            // Best effort: the error in flight says what went wrong; should the cut fail too, the file ends in part
            // of a record.
            int const cut = ::ftruncate(handle_.get(), static_cast<off_t>(size_));
            static_cast<void>(cut);
        }
        throw;
    }
    size_ += text.size();
    provisional_.release();  // no longer empty
}

void require_not_a_folder(fs::path const& path, std::string_view option, std::string_view example) {
    std::error_code error;
    AXONN_REQUIRE(!fs::is_directory(path, error), "{} {} is a folder: name a file such as {}", option, path.string(),
                  (path / example).string());
}

void require_existing_folder(fs::path const& file, std::string_view option) {
    fs::path const folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (auto const problem = path_problem(folder)) {
        fail("{} {}: the folder {} {}: create it or choose another path", option, file.string(), folder.string(),
             *problem);
    }
    std::error_code error;
    AXONN_REQUIRE(fs::is_directory(folder, error), "{} {}: {} is not a folder: choose another path", option,
                  file.string(), folder.string());
}

void require_writable_output(fs::path const& path, std::string_view what, bool overwrite) {
    require_creatable_file(path, what, 0);
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return;
    // A file with other names that the output empties is replaced by a new one (ExclusiveOutputFile), or renamed
    // over (AtomicFile): the other names keep the old file, and whoever holds it locked.
    if (info.st_nlink > 1 && (overwrite || info.st_size == 0)) return;
    AXONN_REQUIRE(!locked_by_another(path), "{} {} is being written by another run (it is locked): choose another path",
                  what, path.string());
    if (overwrite || info.st_size == 0) return;
    throw Error(earlier_run_message(what, path, info.st_size));
}

void require_replaceable_output(fs::path const& path, std::string_view what, bool overwrite) {
    struct stat info {};
    bool const exists = ::stat(path.c_str(), &info) == 0;
    bool const loop = !exists && errno == ELOOP;
    // A link to nothing, or a loop of links, is the user's too: the rename would replace it with the file.
    struct stat link {};
    if (!exists && !overwrite && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        std::error_code error;
        fail("{} {} is a symbolic link to {}, {}: writing the file would replace the link; choose another path, or "
             "pass --overwrite to replace it",
             what, path.string(), fs::read_symlink(path, error).string(),
             loop ? "a loop of links that leads back to itself" : "which does not exist");
    }
    // A folder is left to require_not_a_folder's message, which names a file in it; the rename cannot replace it.
    if (exists && S_ISDIR(info.st_mode)) return;
    require_creatable_file(path, what, partial_suffix.size());
    struct stat partial {};
    if (::lstat(partial_path(path).c_str(), &partial) == 0) throw Error(existing_partial_message(path, what));
    if (!exists) return;
    AXONN_REQUIRE(S_ISREG(info.st_mode), "{} {} is {}, not a regular file: writing it would replace it; choose "
                  "another path", what, path.string(), file_kind(info.st_mode));
    require_writable_output(path, what, overwrite);
}

fs::path resolved(fs::path const& path) {
    std::error_code error;
    // A link to nothing yet is where its target will be written: weakly_canonical leaves it unresolved (metrics
    // through such a link onto the trace's path, or into a checkpoint, were not caught).
    fs::path target = path;
    for (int hops = 0; hops < 40 && fs::is_symlink(target, error); ++hops) {
        fs::path const link = fs::read_symlink(target, error);
        if (error) break;
        target = link.is_absolute() ? link : target.parent_path() / link;
    }
    fs::path const absolute = fs::absolute(target, error);
    fs::path const canonical = error ? fs::path() : fs::weakly_canonical(absolute, error);
    return error ? path.lexically_normal() : canonical;
}

namespace {

// Whether resolved path `path` lies inside resolved folder `folder` (not the folder itself).
bool lies_inside(fs::path const& path, fs::path const& folder) {
    if (path == folder) return false;
    fs::path const relative = path.lexically_relative(folder);
    return !relative.empty() && *relative.begin() != "..";
}

// Whether two paths name one file: the same path once links and `..` are resolved, or two hard links to it.
bool same_file(fs::path const& a, fs::path const& b) {
    if (resolved(a) == resolved(b)) return true;
    std::error_code error;
    return fs::equivalent(a, b, error) && !error;
}

// Every entry below `folder`, as far as it can be read; out of file descriptors is an axonn::Error naming the limit
// (the iterator's own exception was a raw "cannot increment recursive directory iterator").
std::vector<fs::directory_entry> files_under(fs::path const& folder) {
    std::error_code error;
    std::vector<fs::directory_entry> entries = entries_read<fs::recursive_directory_iterator>(folder, error);
    if (error) require_file_descriptors(error.value(), "folder", folder);
    return entries;
}

}  // namespace

void require_distinct_outputs(std::vector<RunOutput> const& outputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        for (std::size_t j = 0; j < outputs.size(); ++j) {
            RunOutput const& a = outputs[i];
            RunOutput const& b = outputs[j];
            if (i == j || a.path.empty() || b.path.empty()) continue;
            AXONN_REQUIRE(i > j || !same_file(a.path, b.path), "{} and {} both name {}: give each output its own path",
                          a.option, b.option, a.path.string());
            fs::path const path_a = resolved(a.path), path_b = resolved(b.path);
            if (!b.folder) continue;
            AXONN_REQUIRE(!lies_inside(path_a, path_b),
                          "{} {} lies inside {} {}, which this run writes: choose a path outside it", a.option,
                          a.path.string(), b.option, b.path.string());
        }
    }
}

void require_input_outside(fs::path const& input, std::string_view input_option, fs::path const& folder,
                           std::string_view folder_option, std::string_view why) {
    AXONN_REQUIRE(!lies_inside(resolved(input), resolved(folder)), "{} {} lies inside {} {}, {}", input_option,
                  input.string(), folder_option, folder.string(), why);
}

void require_not_an_input(fs::path const& output, std::string_view output_option,
                          std::vector<fs::path> const& inputs) {
    std::error_code error;
    bool const exists = fs::exists(output, error);
    for (fs::path const& input : inputs) {
        if (fs::is_directory(input, error)) {  // a checkpoint or a model read from its folder
            AXONN_REQUIRE(resolved(output) != resolved(input),
                          "{} {} is {}, a folder this run reads: writing there would damage it; choose another "
                          "folder",
                          output_option, output.string(), input.string());
            AXONN_REQUIRE(!lies_inside(resolved(output), resolved(input)),
                          "{} {} lies inside {}, which this run reads: writing there would damage it; choose a "
                          "path outside it",
                          output_option, output.string(), input.string());
            if (!exists) continue;
            // Through a hard link, the output may be one of its files anywhere.
            for (auto const& entry : files_under(input)) {
                AXONN_REQUIRE(!entry.is_regular_file(error) || !fs::equivalent(output, entry.path(), error),
                              "{} {} is also {}, a file of {}, which this run reads: writing it would destroy it; "
                              "choose another path",
                              output_option, output.string(), entry.path().string(), input.string());
            }
            continue;
        }
        AXONN_REQUIRE(!exists || !fs::equivalent(output, input, error),
                      "{} {} is also an input of this run ({}): writing it would "
                      "destroy it; choose another path",
                      output_option, output.string(), input.string());
    }
}

std::optional<std::uint64_t> free_bytes_for(std::filesystem::path const& path) {
    std::filesystem::path existing = std::filesystem::absolute(path);
    std::error_code error;
    while (!std::filesystem::exists(existing, error) && existing.has_relative_path()) existing = existing.parent_path();
    struct statvfs info {};
    if (::statvfs(existing.c_str(), &info) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

std::string human_bytes(double bytes) {
    char const* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (bytes >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        ++unit;
    }
    return fmt::format("{:.1f} {}", bytes, units[unit]);
}

}  // namespace axonn
