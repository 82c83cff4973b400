// The checked file layer: inputs that are not regular files are named as what they are, atomic files appear
// whole or not at all, a run's output file is locked and never silently replaced, and no output may be an input.
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "support/error_of.h"
#include "support/temp_dir.h"
#include "support/files.h"
#include "support/no_descriptors_left.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

using testing::file_bytes;

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;


TEST(FileIo, InputsThatAreNotRegularFilesAreNamedAsWhatTheyAre) {
    TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
    fs::create_symlink(dir / "loop", dir / "loop");
    EXPECT_NE(error_of([&] { open_input_file(dir.path(), "input", "hint"); }).find("is a folder, not a regular file: "
              "hint"), std::string::npos);
    EXPECT_NE(error_of([&] { open_input_file(dir / "pipe", "input", "hint"); }).find("is a FIFO (named pipe)"),
              std::string::npos);
    EXPECT_NE(error_of([&] { open_input_file(dir / "loop", "input", "hint"); }).find("is a loop of symbolic links"),
              std::string::npos);
    EXPECT_NE(error_of([&] { open_input_file(dir / "absent", "input", "hint"); }).find("does not exist: hint"),
              std::string::npos);
}

// A results folder is accepted when it is new or empty (or with overwrite), refused when it holds anything or when
// a part of its path is a file; the message names what it holds.
TEST(FileIo, AnOutputFolderMustBeNewOrEmpty) {
    TempDir dir("output_folder");
    fs::create_directories(dir / "empty");
    fs::create_directories(dir / "used");
    std::ofstream(dir / "used" / "results.md") << "# an earlier study\n";
    std::ofstream(dir / "file") << "text";
    ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
    fs::create_directories(dir / "with_pipe");
    ASSERT_EQ(::mkfifo((dir / "with_pipe" / "pipe").c_str(), 0600), 0);
    struct Case {
        fs::path folder;
        bool overwrite;
        std::string expected;  // a piece of the error, or "" for none
    };
    Case const cases[] = {
        {dir / "new" / "deeper", false, ""},
        {dir / "empty", false, ""},
        {dir / "used", true, ""},
        {dir / "used", false, "the folder " + (dir / "used").string() + " for the results already holds results.md"},
        {dir / "file", true, "a part of that path is a file, not a folder"},
        {dir / "file" / "under", false, "cannot create the folder " + (dir / "file" / "under").string()},
        {dir / "pipe" / "under", true, "a part of that path, " + (dir / "pipe").string() + ", is a FIFO (named pipe)"},
        {dir / "with_pipe", true, "holds pipe, which is a FIFO (named pipe): a file this run writes there would "
                                  "replace it"},
    };
    for (Case const& c : cases) {
        auto const check = [&] { require_new_output_folder(c.folder, "results", c.overwrite); };
        if (c.expected.empty()) {
            EXPECT_NO_THROW(check()) << c.folder;
        } else {
            std::string const error = error_of(check);
            EXPECT_NE(error.find(c.expected), std::string::npos) << c.folder << ": " << error;
        }
    }
}

// Out of file descriptors, an input was "cannot be opened (Too many open files): check the path or run axonn
// prepare" and an output "... choose another path": the limit is named instead, whatever the caller's hint.
TEST(FileIo, OutOfFileDescriptorsNamesTheLimitNotThePath) {
    testing::TempDir dir;
    write_file(dir / "shard.bin", "x");
    fs::create_directory(dir / "full");
    write_file(dir / "full" / "earlier.json", "{}");
    using testing::error_with_no_descriptors_left;
    std::vector<std::string> const errors = {
        error_with_no_descriptors_left(
            [&] { open_input_file(dir / "shard.bin", "token shard", "run axonn prepare"); }),
        error_with_no_descriptors_left(
            [&] { ExclusiveOutputFile(dir / "m.jsonl", "metrics file", ExistingOutput::refuse); }),
        error_with_no_descriptors_left([&] { write_file_atomically(dir / "out.json", "{}", "grid file"); }),
        // A folder that could not be listed was read as empty, and so as a new output folder.
        error_with_no_descriptors_left([&] { folder_entries(dir.path()); }),
        error_with_no_descriptors_left([&] { require_new_output_folder(dir / "full", "model", false); }),
    };
    for (std::string const& error : errors) {
        EXPECT_NE(error.find(fmt::format("cannot be opened: this process has as many files open as it may (ulimit -n "
                                         "{}): raise the limit",
                                         testing::few_descriptors)),
                  std::string::npos)
            << error;
        EXPECT_EQ(error.find("prepare"), std::string::npos) << error;
        EXPECT_EQ(error.find("choose another"), std::string::npos) << error;
    }
}

// A folder this command made but another holds now (FolderLock) is that command's: an export that lost a race
// with a prepare into one new folder removed it, empty still, and the prepare then failed too.
TEST(FileIo, AMadeFolderAnotherCommandHoldsIsNotRemoved) {
    testing::TempDir dir;
    fs::path const folder = dir / "shards";
    std::optional<FolderLock> other_command;
    {
        MadeFolder const made(folder, "export folder");
        other_command.emplace(folder, "token shard folder");
        EXPECT_NE(error_of([&] { FolderLock const mine(folder, "export folder"); }).find("is being written by another "
                                                                                          "command"),
                  std::string::npos);
    }
    EXPECT_TRUE(fs::is_directory(folder));
    {
        MadeFolder const made(dir / "unheld", "export folder");
    }
    EXPECT_FALSE(fs::exists(dir / "unheld"));  // an empty folder it made and no one holds goes again
}

TEST(FileIo, ReadsWholeFilesUpToALimit) {
    TempDir dir;
    std::ofstream(dir / "text") << "0123456789";
    EXPECT_EQ(read_input_file(dir / "text", "input", "", 10), "0123456789");
    EXPECT_NE(error_of([&] { read_input_file(dir / "text", "input", "", 9); }).find("has 10 bytes, more than the 9"),
              std::string::npos);
}

TEST(FileIo, AnAtomicFileAppearsOnlyWhenCommitted) {
    TempDir dir;
    fs::path const path = dir / "out.txt";
    write_file_atomically(path, "old", "test file");
    {
        AtomicFile file(path, "test file");
        file.write("new contents");
        EXPECT_EQ(file_bytes(path), "old");  // until commit, the old file stays
        EXPECT_TRUE(fs::exists(dir / "out.txt.partial"));
    }  // abandoned: a failure between writing and committing
    EXPECT_EQ(file_bytes(path), "old");
    EXPECT_FALSE(fs::exists(dir / "out.txt.partial"));
    write_file_atomically(path, "new", "test file");
    EXPECT_EQ(file_bytes(path), "new");
}

// Its rename would replace whatever the destination is with a regular file: as root, a plot written to /dev/null
// replaced the device. A FIFO, and a link to /dev/null (were the guard gone, only the link would be replaced), are
// refused before anything is written, with and without overwrite, and stay what they were.
TEST(FileIo, AnAtomicFileNeverReplacesWhatIsNotARegularFile) {
    TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
    fs::create_symlink("/dev/null", dir / "null");
    EXPECT_NE(error_of([&] { write_file_atomically(dir / "pipe", "x", "plot"); })
                  .find("plot " + (dir / "pipe").string() + " is a FIFO (named pipe), not a regular file: writing it "
                        "would replace it"),
              std::string::npos);
    EXPECT_NE(error_of([&] { write_file_atomically(dir / "null", "x", "plot"); }).find("is a character device"),
              std::string::npos);
    for (bool const overwrite : {false, true}) {
        EXPECT_NE(error_of([&] { require_replaceable_output(dir / "null", "plot", overwrite); })
                      .find("is a character device, not a regular file"),
                  std::string::npos);
    }
    EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
    EXPECT_TRUE(fs::is_symlink(dir / "null"));
    EXPECT_FALSE(fs::exists(dir / "pipe.partial"));
    // A regular file is replaced only with overwrite; a path that does not exist yet is free.
    testing::write_file(dir / "old.png", "old");
    EXPECT_NE(error_of([&] { require_replaceable_output(dir / "old.png", "plot", false); }).find("already exists"),
              std::string::npos);
    EXPECT_NO_THROW(require_replaceable_output(dir / "old.png", "plot", true));
    EXPECT_NO_THROW(require_replaceable_output(dir / "new.png", "plot", false));
    // A link to nothing is the user's too, and would be replaced by the file: only with overwrite.
    fs::create_symlink("run1/plot.png", dir / "latest.png");
    EXPECT_NE(error_of([&] { require_replaceable_output(dir / "latest.png", "plot", false); })
                  .find("plot " + (dir / "latest.png").string() + " is a symbolic link to run1/plot.png, which does "
                        "not exist: writing the file would replace the link"),
              std::string::npos);
    EXPECT_NO_THROW(require_replaceable_output(dir / "latest.png", "plot", true));
    // A loop of links is named as one (it was called a link to a file "which does not exist", which did).
    fs::create_symlink("loop2.png", dir / "loop1.png");
    fs::create_symlink("loop1.png", dir / "loop2.png");
    EXPECT_NE(error_of([&] { require_replaceable_output(dir / "loop1.png", "plot", false); })
                  .find("plot " + (dir / "loop1.png").string() + " is a symbolic link to loop2.png, a loop of links "
                        "that leads back to itself: writing the file would replace the link"),
              std::string::npos);
}

TEST(FileIo, TwoWritersOfOneFileCollideWithAnErrorNotATornFile) {
    TempDir dir;
    fs::path const path = dir / "shard.bin";
    AtomicFile first(path, "token shard");
    first.write("first");
    EXPECT_NE(error_of([&] { AtomicFile second(path, "token shard"); }).find("another process is writing it"),
              std::string::npos);
    first.commit();
    EXPECT_EQ(file_bytes(path), "first");
    write_file_atomically(path, "second", "token shard");  // once the first is done, the next writer may go
    EXPECT_EQ(file_bytes(path), "second");
}

// Two commands given one new output path both checked it before their work, when it did not exist yet; the one
// that finished second replaced the first's file without --overwrite. Without it (`keep`) a file that appeared
// meanwhile is kept and the later commit fails naming it, leaving no partial file; with it, it is replaced.
TEST(FileIo, AFileThatAppearedAfterTheCheckIsKeptUnlessReplacingWasAsked) {
    TempDir dir;
    fs::path const path = dir / "grid.json";
    // The path was checked (it did not exist), then the other command wrote it before this one's result was ready.
    write_file_atomically(path, "the earlier command's", "grid file", ExistingDestination::keep);
    {
        AtomicFile late(path, "grid file", ExistingDestination::keep);
        late.write("the later command's");
        std::string const error = error_of([&] { late.commit(); });
        EXPECT_NE(error.find("grid file " + path.string() + " appeared while this command ran"), std::string::npos)
            << error;
        EXPECT_NE(error.find("--overwrite"), std::string::npos) << error;
    }
    EXPECT_EQ(file_bytes(path), "the earlier command's");
    EXPECT_FALSE(fs::exists(dir / "grid.json.partial"));

    AtomicFile asked(path, "grid file", ExistingDestination::replace);
    asked.write("replaced as asked");
    asked.commit();
    EXPECT_EQ(file_bytes(path), "replaced as asked");
}

// The partial file is always made new: whatever already has its name (a killed run's leftover, the user's own
// file, a link to another file) is named in the error and left as it was, and so is the link's target.
TEST(FileIo, WhatAlreadyHasThePartialFilesNameIsNeverWrittenOver) {
    TempDir dir;
    std::ofstream(dir / "out.txt.partial") << "stale bytes";
    EXPECT_NE(error_of([&] { write_file_atomically(dir / "out.txt", "fresh", "test file"); })
                  .find((dir / "out.txt.partial").string() + ", where it is written first, already exists (11 bytes)"),
              std::string::npos);
    EXPECT_EQ(file_bytes(dir / "out.txt.partial"), "stale bytes");
    EXPECT_FALSE(fs::exists(dir / "out.txt"));
    std::ofstream(dir / "precious.txt") << "precious";
    fs::create_symlink(dir / "precious.txt", dir / "plot.png.partial");
    for (bool const overwrite : {false, true}) {  // refused before any work, as by the writer itself
        EXPECT_NE(error_of([&] { require_replaceable_output(dir / "plot.png", "plot", overwrite); })
                      .find("is a symbolic link, which this program never writes through"),
                  std::string::npos);
    }
    EXPECT_NE(error_of([&] { write_file_atomically(dir / "plot.png", "png", "plot"); }).find("symbolic link"),
              std::string::npos);
    EXPECT_EQ(file_bytes(dir / "precious.txt"), "precious");
    EXPECT_TRUE(fs::is_symlink(dir / "plot.png.partial"));
}

// What would only fail when the output is written, after the work, is refused before it: a path that ends with a
// slash, a name too long once ".partial" is added, a file another run holds locked (its metrics).
TEST(FileIo, OutputsThatCannotBeWrittenAreRefusedBeforeTheWork) {
    TempDir dir;
    EXPECT_NE(error_of([&] { require_replaceable_output(dir / "grid.json/", "grid file", false); })
                  .find("ends with '/', so it names a folder"),
              std::string::npos);
    EXPECT_FALSE(fs::exists(dir / "grid.json"));
    std::string const long_name(250, 'n');
    EXPECT_NE(error_of([&] { require_replaceable_output(dir / long_name, "grid file", false); })
                  .find("its name has 250 characters, more than the 247 this file system takes"),
              std::string::npos);
    EXPECT_NO_THROW(require_writable_output(dir / long_name, "metrics file", false));  // written in place
    {
        ExclusiveOutputFile const metrics(dir / "metrics.jsonl", "metrics file", ExistingOutput::refuse);
        for (bool const overwrite : {false, true}) {
            EXPECT_NE(error_of([&] { require_replaceable_output(dir / "metrics.jsonl", "trace file", overwrite); })
                          .find("trace file " + (dir / "metrics.jsonl").string() + " is being written by another run"),
                      std::string::npos);
        }
    }
    EXPECT_NO_THROW(require_replaceable_output(dir / "metrics.jsonl", "trace file", true));  // once it is closed
}

TEST(FileIo, AWriteToAFullDeviceFailsNamingTheFile) {
    EXPECT_NE(error_of([&] { ExclusiveOutputFile("/dev/full", "metrics file", ExistingOutput::refuse).write("x\n"); })
                  .find("cannot write metrics file /dev/full: the disk is full"),
              std::string::npos);
}

TEST(FileIo, AnOutputFileBelongsToOneRunAndKeepsAnEarlierRunsData) {
    TempDir dir;
    fs::path const path = dir / "metrics.jsonl";
    {
        ExclusiveOutputFile first(path, "metrics file", ExistingOutput::refuse);
        first.write("line 1\n");
        // A second writer, even in this process, finds the file locked.
        EXPECT_NE(error_of([&] { ExclusiveOutputFile(path, "metrics file", ExistingOutput::overwrite); }).find("is being written by "
                  "another run"), std::string::npos);
        first.write("line 2\n");
    }
    EXPECT_EQ(file_bytes(path), "line 1\nline 2\n");
    EXPECT_NE(error_of([&] { ExclusiveOutputFile(path, "metrics file", ExistingOutput::refuse); }).find("already exists (14 bytes"),
              std::string::npos);
    EXPECT_EQ(file_bytes(path), "line 1\nline 2\n");  // refused, not emptied
    ExclusiveOutputFile(path, "metrics file", ExistingOutput::overwrite).write("again\n");
    EXPECT_EQ(file_bytes(path), "again\n");
}

// A file with other names (hard links) is never emptied or first written in place, which would change what those
// names hold: with --overwrite, or empty, the output's name gets a new file and the others keep theirs. Through a
// hard link, `--metrics X --overwrite` wrote a checkpoint's COMPLETE marker, and an empty file another checkpoint
// folder's lock. A run's own log, continued, still grows in place.
TEST(FileIo, AnOutputWithOtherNamesIsReplacedNotWrittenThrough) {
    TempDir dir;
    write_file(dir / "COMPLETE", "step 10\n");
    fs::create_hard_link(dir / "COMPLETE", dir / "metrics.jsonl");
    EXPECT_NE(error_of([&] { ExclusiveOutputFile(dir / "metrics.jsonl", "metrics file", ExistingOutput::refuse); })
                  .find("already exists (8 bytes"),
              std::string::npos);
    ExclusiveOutputFile(dir / "metrics.jsonl", "metrics file", ExistingOutput::overwrite).write("{}\n");
    EXPECT_EQ(file_bytes(dir / "COMPLETE"), "step 10\n");
    EXPECT_EQ(file_bytes(dir / "metrics.jsonl"), "{}\n");

    // An empty file that another holds locked (a checkpoint folder's lock, which its run holds): no lock in the way
    // of the new file, and the lock's file stays empty.
    {
        ExclusiveOutputFile const lock_holder(dir / ".lock", "checkpoint folder lock", ExistingOutput::refuse);
        fs::create_hard_link(dir / ".lock", dir / "lock.jsonl");
        require_writable_output(dir / "lock.jsonl", "metrics file", false);
        ExclusiveOutputFile(dir / "lock.jsonl", "metrics file", ExistingOutput::refuse).write("{}\n");
    }
    EXPECT_EQ(file_bytes(dir / ".lock"), "");
    EXPECT_EQ(file_bytes(dir / "lock.jsonl"), "{}\n");

    fs::create_hard_link(dir / "metrics.jsonl", dir / "backup.jsonl");
    ExclusiveOutputFile(dir / "metrics.jsonl", "metrics file", ExistingOutput::append).write("{}\n");
    EXPECT_EQ(file_bytes(dir / "backup.jsonl"), "{}\n{}\n");
}

TEST(FileIo, NoOutputMayBeAnInput) {
    TempDir dir;
    std::ofstream(dir / "data.bin") << "tokens";
    fs::create_hard_link(dir / "data.bin", dir / "alias.bin");
    std::vector<fs::path> const inputs = {dir / "other.bin", dir / "data.bin"};
    EXPECT_NO_THROW(require_not_an_input(dir / "metrics.jsonl", "--metrics", inputs));
    EXPECT_NE(error_of([&] { require_not_an_input(dir / "alias.bin", "--metrics", inputs); }).find("is also an input"),
              std::string::npos);
    EXPECT_NE(error_of([&] { require_not_an_input(dir.path() / "." / "data.bin", "--metrics", inputs); })
                  .find("is also an input"),
              std::string::npos);
}

TEST(FileIo, FoldersUnderAFileAreRefusedWithTheReason) {
    TempDir dir;
    std::ofstream(dir / "file") << "x";
    EXPECT_NE(error_of([&] { create_folder(dir / "file" / "sub", "metrics file"); }).find("a part of that path is a "
              "file, not a folder"), std::string::npos);
}

}  // namespace
}  // namespace axonn
