// A resumed run's metrics file: its own earlier records stay, the steps it computes again go, and an earlier
// launch's closing validation at the resume step stays unless the resumed run measures it again. The file is cut
// in place: a link to it still names it.
#include "axonn/train/metrics.h"
#include "support/error_of.h"
#include "support/files.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace axonn {
namespace {

using testing::error_of;
using testing::file_bytes;
using testing::TempDir;

// The file an interrupted launch of run "r" leaves: steps 0-3 trained, validation at 0, the closing validation at 3
// (its --steps), then a step 3 the launch trained after its last checkpoint (a later launch with more steps).
std::string const earlier_launch =
    R"({"loss":4.0,"run":"r","step":0,"val_loss":4.5})" "\n"
    R"({"loss":3.0,"run":"r","step":1})" "\n"
    R"({"loss":2.0,"run":"r","step":2})" "\n"
    R"({"run":"r","step":3,"val_loss":2.5})" "\n"
    R"({"loss":1.5,"run":"r","step":3})" "\n";

// The file after a launch resumed at `resume` wrote its step 3, through a symbolic link to it.
std::string resumed_file(TempDir const& dir, MetricsResume resume) {
    std::ofstream(dir / "metrics.jsonl") << earlier_launch;
    std::filesystem::remove(dir / "latest.jsonl");
    std::filesystem::create_symlink("metrics.jsonl", dir / "latest.jsonl");
    MetricsLog log(dir / "latest.jsonl", "r", "", false, resume);
    log.write({{"step", 3}, {"loss", 1.25}});
    EXPECT_TRUE(std::filesystem::is_symlink(dir / "latest.jsonl"));
    return file_bytes(dir / "metrics.jsonl");
}

TEST(MetricsLog, AResumedRunKeepsTheClosingValidationItDoesNotMeasureAgain) {
    TempDir dir;
    std::string const before = R"({"loss":4.0,"run":"r","step":0,"val_loss":4.5})" "\n"
                               R"({"loss":3.0,"run":"r","step":1})" "\n"
                               R"({"loss":2.0,"run":"r","step":2})" "\n";
    std::string const closing = R"({"run":"r","step":3,"val_loss":2.5})" "\n";
    std::string const resumed_step = R"({"loss":1.25,"run":"r","step":3})" "\n";
    EXPECT_EQ(resumed_file(dir, {3, false, {}}), before + closing + resumed_step);
    // Validating at step 3 itself, the resumed run writes the value in its own step-3 record: one, not two.
    EXPECT_EQ(resumed_file(dir, {3, true, {}}), before + resumed_step);
    // Resumed from step 2, step 3's records are the later launch's to write.
    EXPECT_EQ(resumed_file(dir, {2, false, {}}), R"({"loss":4.0,"run":"r","step":0,"val_loss":4.5})" "\n"
                                             R"({"loss":3.0,"run":"r","step":1})" "\n" +
                                                 std::string(R"({"loss":1.25,"run":"r","step":3})" "\n"));
}

// Launch "a" wrote steps 0-3; a rollback to step 2 by launch "b" without --metrics computed steps 2 and 3 again and
// saved step 4. Resumed there, the file's step-2 and step-3 records are of steps rolled back: they go with the
// later ones (they were kept as the run's own), and the records of the resuming launch carry its id.
TEST(MetricsLog, ARecordOfAStepAnotherLaunchComputedGoes) {
    TempDir dir;
    std::string const kept = R"({"launch":"a","loss":4.0,"run":"r","step":0})" "\n"
                             R"({"launch":"a","loss":3.0,"run":"r","step":1})" "\n";
    std::ofstream(dir / "metrics.jsonl") << kept << R"({"launch":"a","loss":2.0,"run":"r","step":2})" "\n"
                                         << R"({"launch":"a","loss":1.5,"run":"r","step":3})" "\n";
    MetricsResume const resume{4, false, {{0, "a"}, {2, "b"}}};
    EXPECT_NO_THROW(require_resumable_metrics_file(dir / "metrics.jsonl", "r", resume, false));
    MetricsLog log(dir / "metrics.jsonl", "r", "c", false, resume);
    log.write({{"step", 4}, {"loss", 1.0}});
    EXPECT_EQ(file_bytes(dir / "metrics.jsonl"), kept + R"({"launch":"c","loss":1.0,"run":"r","step":4})" "\n");
}

// A record edited into what axonn never writes (a step that is not a whole number from 0, a launch that is not a
// string) is not the run's own: refused, naming it (a step "1" was called a record of another run, with this run's
// own id; a launch 5 or a step -1 was kept).
TEST(MetricsLog, ARecordNotAsAxonnWritesThemIsRefused) {
    TempDir dir;
    for (char const* edited : {R"({"launch":5,"loss":1.0,"run":"r","step":1})",
                               R"({"loss":1.0,"run":"r","step":-1})", R"({"loss":1.0,"run":"r","step":"1"})"}) {
        std::ofstream(dir / "metrics.jsonl") << R"({"loss":2.0,"run":"r","step":0})" "\n" << edited << "\n";
        std::string const error = error_of([&] {
            require_resumable_metrics_file(dir / "metrics.jsonl", "r", {2, false, {}}, false);
        });
        EXPECT_NE(error.find("line 2 is not a metrics record as axonn writes them (its step "), std::string::npos)
            << edited << ": " << error;
    }
}

// A blank line (an editor's) is nobody's record: the file is still the run's own, and the cut keeps it where it
// lies among the kept records.
TEST(MetricsLog, BlankLinesAreNoForeignRecords) {
    TempDir dir;
    std::string const kept = R"({"loss":4.0,"run":"r","step":0})" "\n"
                             "\n"
                             R"({"loss":3.0,"run":"r","step":1})" "\n";
    std::ofstream(dir / "metrics.jsonl") << kept << R"({"loss":2.0,"run":"r","step":2})" "\n  \n";
    EXPECT_NO_THROW(require_resumable_metrics_file(dir / "metrics.jsonl", "r", {2, false, {}}, false));
    MetricsLog log(dir / "metrics.jsonl", "r", "", false, MetricsResume{2, false, {}});
    EXPECT_EQ(file_bytes(dir / "metrics.jsonl"), kept);
}

// Kept records that end before the resume step, or miss steps between them (the file cut by hand, or a launch
// without --metrics): the file went on after the gap without a word. The note names the steps without a record; a
// file whose records reach the resume step, or an empty one (a resumed run that adds --metrics), has none. Records
// cut from the resume step on were cut without a word too (a resume from a checkpoint copied out of its folder
// replaced a whole branch's records): the note names their steps.
TEST(MetricsLog, AGapBeforeTheResumeStepAndTheRecordsCutAreNamed) {
    TempDir dir;
    std::ofstream(dir / "metrics.jsonl") << R"({"loss":4.0,"run":"r","step":0})" "\n"
                                            R"({"loss":3.0,"run":"r","step":1})" "\n"
                                            R"({"loss":2.0,"run":"r","step":3})" "\n"
                                            R"({"loss":2.0,"run":"r","step":6})" "\n";
    // Each log opened and closed in turn: a log holds its file's lock while it lives.
    auto const notes = [](std::filesystem::path const& path, std::int64_t step) {
        return MetricsLog(path, "r", "", false, MetricsResume{step, false, {}}).notes();
    };
    std::string const file = (dir / "metrics.jsonl").string();
    EXPECT_EQ(notes(dir / "metrics.jsonl", 10), "  metrics file " + file +
                                                    " has no record of steps 2, 4 to 5, 7 to 9 (cut from the file, lost "
                                                    "to a write that failed, or trained without --metrics); it goes "
                                                    "on from step 10\n");
    // Cut after step 1: nothing missing before step 2, and the records of steps 3 and 6 gone.
    EXPECT_EQ(notes(dir / "metrics.jsonl", 2), "  metrics file " + file + ": its records of steps 3 to 6, from the "
                                                                          "checkpoint's step on, are cut: this run "
                                                                          "computes those steps again\n");
    EXPECT_EQ(notes(dir / "metrics.jsonl", 2), "");  // nothing left to cut
    std::ofstream(dir / "empty.jsonl") << "";
    EXPECT_EQ(notes(dir / "empty.jsonl", 5), "");

    // Records before the resume step that another launch than the checkpoint's lineage names computed (the branch
    // that replaced a checkpoint set aside, which is resumed): cut as another branch's, which this run does not
    // compute again (they were said to be cut "from the checkpoint's step on"), and the gap they leave named.
    std::ofstream(dir / "branches.jsonl") << R"({"launch":"a","loss":4.0,"run":"r","step":0})" "\n"
                                             R"({"launch":"a","loss":3.0,"run":"r","step":1})" "\n"
                                             R"({"launch":"b","loss":2.0,"run":"r","step":2})" "\n"
                                             R"({"launch":"b","loss":2.0,"run":"r","step":3})" "\n";
    std::string const branches = (dir / "branches.jsonl").string();
    EXPECT_EQ(MetricsLog(dir / "branches.jsonl", "r", "", false, MetricsResume{3, false, {{0, "a"}}}).notes(),
              "  metrics file " + branches + ": its records of step 2, another branch's (launches the checkpoint's "
              "lineage does not name), are cut: this run does not compute those steps again\n"
              "  metrics file " + branches + ": its records of step 3, from the checkpoint's step on, are cut: this "
              "run computes those steps again\n"
              "  metrics file " + branches + " has no record of step 2 (cut from the file, lost to a write that "
              "failed, or trained without --metrics); it goes on from step 3\n");
}

// A record the resumed run keeps after one it drops (edited by hand: a later step's record first) would be cut
// with it: refused up front, naming both lines, --overwrite or not; the file is left as it was.
TEST(MetricsLog, ARecordKeptAfterOneDroppedIsRefused) {
    TempDir dir;
    std::string const edited = R"({"loss":4.0,"run":"r","step":0})" "\n"
                               R"({"loss":1.0,"run":"r","step":5})" "\n"
                               R"({"loss":3.0,"run":"r","step":1})" "\n";
    std::ofstream(dir / "metrics.jsonl") << edited;
    std::string const error =
        error_of([&] { require_resumable_metrics_file(dir / "metrics.jsonl", "r", {2, false, {}}, true); });
    EXPECT_NE(error.find("line 2 (step 5) comes before line 3 (step 1)"), std::string::npos) << error;
    EXPECT_EQ(file_bytes(dir / "metrics.jsonl"), edited);
    EXPECT_NO_THROW(require_resumable_metrics_file(dir / "metrics.jsonl", "r", {6, false, {}}, false));
    // Another run's file is refused as such, or replaced with --overwrite.
    EXPECT_NE(error_of([&] {
                  require_resumable_metrics_file(dir / "metrics.jsonl", "another run", {2, false, {}}, false);
              })
                  .find("line 1 is a record of run r, not of this run"),
              std::string::npos);
    EXPECT_NO_THROW(require_resumable_metrics_file(dir / "metrics.jsonl", "another run", {2, false, {}}, true));
}

// Two records of one step that the resumed run would keep (a file edited by hand, or two joined) are refused, naming
// both lines, --overwrite or not; a training record and the closing validation of one step are not a repeat, and a
// repeat among the records the resume cuts is cut with them.
TEST(MetricsLog, ARepeatedRecordOfAStepIsRefused) {
    TempDir dir;
    std::string const joined = R"({"loss":4.0,"run":"r","step":0})" "\n"
                               R"({"loss":3.0,"run":"r","step":1})" "\n"
                               R"({"loss":3.0,"run":"r","step":1})" "\n"
                               R"({"loss":2.0,"run":"r","step":2})" "\n";
    std::ofstream(dir / "metrics.jsonl") << joined;
    std::string const error =
        error_of([&] { require_resumable_metrics_file(dir / "metrics.jsonl", "r", {3, false, {}}, true); });
    EXPECT_NE(error.find("line 3 repeats the training record of step 1 on line 2"), std::string::npos) << error;
    EXPECT_EQ(file_bytes(dir / "metrics.jsonl"), joined);
    EXPECT_NO_THROW(require_resumable_metrics_file(dir / "metrics.jsonl", "r", {1, false, {}}, false));
    std::ofstream(dir / "validations.jsonl") << R"({"loss":4.0,"run":"r","step":0})" "\n"
                                                R"({"run":"r","step":1,"val_loss":2.5})" "\n"
                                                R"({"run":"r","step":1,"val_loss":2.5})" "\n";
    EXPECT_NE(error_of([&] {
                  require_resumable_metrics_file(dir / "validations.jsonl", "r", {1, false, {}}, false);
              }).find("line 3 repeats the closing validation of step 1 on line 2"),
              std::string::npos);
    std::ofstream(dir / "closing.jsonl") << earlier_launch;  // step 3's closing validation, then its training record
    EXPECT_NO_THROW(require_resumable_metrics_file(dir / "closing.jsonl", "r", {4, false, {}}, false));
}

// A line that is no record, edited into the run's own file, is refused as what it is (not as another run's), and
// the message says that repairing it keeps the run's records, which --overwrite would replace.
TEST(MetricsLog, ALineEditedIntoTheRunsOwnFileIsNamedWithWhatOverwriteWouldLose) {
    TempDir dir;
    std::ofstream(dir / "metrics.jsonl") << R"({"loss":4.0,"run":"r","step":0})" "\n"
                                            "GARBAGE\n"
                                            R"({"loss":3.0,"run":"r","step":1})" "\n";
    std::string const error =
        error_of([&] { require_resumable_metrics_file(dir / "metrics.jsonl", "r", {2, false, {}}, false); });
    EXPECT_NE(error.find("line 2 is not a metrics record: a resumed run appends to its own metrics file only; remove "
                         "or repair line 2 to continue the file, name another --metrics path, or pass --overwrite to "
                         "replace the whole file (its 2 records of this run, run r, with it)"),
              std::string::npos)
        << error;
}

}  // namespace
}  // namespace axonn
