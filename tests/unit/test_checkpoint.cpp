// Checkpoints on one process: the safetensors header (written, parsed, and refused when hostile), a save and a
// load that give back every weight and moment bit for bit, --keep, and damaged checkpoints. Each hostile file is
// refused twice over: by the library with an axonn::Error naming the problem and the previous checkpoint, and by
// `axonn train --resume` with one line and exit status 1; the previous checkpoint still loads afterwards.
// Multi-rank saving and loading onto other grids: tests/mpi/test_checkpoint_grids.cpp; killed jobs:
// tests/jobs/test_checkpoint_jobs.cpp.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/checkpoint/hf_export.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/float16.h"
#include "axonn/core/host_buffer.h"
#include "axonn/core/rng.h"
#include "axonn/families/gpt2/hf_gpt2.h"
#include "axonn/io/hf_safetensors.h"
#include "axonn/io/safetensors.h"
#include "axonn/io/token_shard.h"
#include "axonn/train/checkpointing.h"
#include "support/error_of.h"
#include "support/stored_tensors.h"
#include "support/temp_dir.h"
#include "support/files.h"
#include "support/no_descriptors_left.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <zlib.h>

#include <array>
#include <cctype>
#include <csignal>
#include <cmath>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <tuple>

namespace axonn {
namespace {

using testing::file_bytes;
using testing::write_file;

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;

// The model `axonn train --model gpt2-micro --tokenizer byte` builds, so that the command can resume these files.
GptConfig byte_micro() {
    GptConfig config = gpt_preset("gpt2-micro");
    config.vocab_size = 257;
    return config;
}

TEST(Safetensors, AHeaderReadsBackAsWritten) {
    std::vector<SafetensorsEntry> entries = {{"a", DType::f32, {2, 3}, 0, 0}, {"b", DType::bf16, {5}, 0, 0}};
    std::string const bytes = safetensors_header_bytes(entries, {{"format", "pt"}});
    EXPECT_EQ(bytes.size() % 8, 0u) << "the data must start 8-byte aligned";
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<unsigned char>(bytes[i]);
    ASSERT_EQ(length + 8, bytes.size());
    SafetensorsHeader const header = parse_safetensors_header(bytes.substr(8), 34);
    ASSERT_EQ(header.tensors.size(), 2u);
    EXPECT_EQ(header.find("a")->end, 24u);
    EXPECT_EQ(header.find("b")->begin, 24u);
    EXPECT_EQ(header.find("b")->end, 34u);
    EXPECT_EQ(header.find("b")->dtype, DType::bf16);
    EXPECT_EQ(header.metadata.at("format"), "pt");
}

struct HostileHeader {
    char const* name;
    std::string json;
    std::uint64_t data_bytes;
    char const* expected;
};

TEST(Safetensors, HostileHeadersAreRefusedWithTheirProblem) {
    std::vector<HostileHeader> const cases = {
        {"not_json", "{\"a\": ", 8, "not valid JSON"},
        {"not_an_object", "[1, 2]", 8, "not a JSON object"},
        {"no_dtype", R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", 8, "has no \"dtype\""},
        {"unknown_dtype", R"({"a": {"dtype": "F8", "shape": [2], "data_offsets": [0, 2]}})", 8, "dtype F8"},
        {"negative_size", R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8, "non-negative"},
        {"absurd_shape", R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", 8,
         "absurd shape"},
        {"offsets_outside", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", 8, "outside the 8"},
        {"reversed_offsets", R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})", 8, "outside"},
        {"size_mismatch", R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 16, "needs 12 bytes"},
        {"overlap", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 16, "overlap"},
        {"deep_nesting", "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}", 8, "deeper"},
        {"overlap_around_an_empty_tensor", R"({"a": {"dtype": "F32", "shape": [25], "data_offsets": [0, 100]},
                                                "z": {"dtype": "F32", "shape": [0], "data_offsets": [50, 50]},
                                                "c": {"dtype": "F32", "shape": [25], "data_offsets": [60, 160]}})",
         160, "overlap"},
        // Data that no tensor covers, which the format forbids (safetensors' own reader refuses it): a file's bytes
        // are its tensors alone, and an import exported again is the same file.
        {"bytes_after_the_last_tensor", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 24,
         "the data's last 16 bytes (from byte 8) belong to no tensor"},
        {"a_hole_between_tensors", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                       "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})", 20,
         "the data's bytes [8, 12) before tensor 'b' belong to no tensor"},
        {"metadata_not_strings", R"({"__metadata__": {"k": 3}})", 0, "not a string"},
        {"tensor_named_twice", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                   "a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12,
         R"(names the key "a" twice)"},
    };
    for (auto const& hostile : cases) {
        EXPECT_NE(error_of([&] { parse_safetensors_header(hostile.json, hostile.data_bytes); }).find(hostile.expected),
                  std::string::npos)
            << hostile.name << ": " << error_of([&] { parse_safetensors_header(hostile.json, hostile.data_bytes); });
    }
}

// A serial gpt2-micro with weights from a seed and moments made up from another, as a trained run would have.
struct SerialState {
    ProcessGrid grid{MPI_COMM_SELF, GridShape{}};
    ShardLayout layout = gpt_layout(byte_micro(), GridPosition::of(grid));
    std::vector<float> params, exp_avg, exp_avg_sq;

    explicit SerialState(std::uint64_t seed) {
        auto const total = static_cast<std::size_t>(layout.total());
        params.resize(total);
        exp_avg.resize(total);
        exp_avg_sq.resize(total);
        fill_normal(params, {seed, 1}, 0, 0.0f, 0.02f);
        fill_normal(exp_avg, {seed, 2}, 0, 0.0f, 1e-3f);
        fill_normal(exp_avg_sq, {seed, 3}, 0, 1.0f, 1e-3f);
    }

    fs::path save(fs::path const& dir, int step, std::uint64_t max_file_bytes = 64 << 10) {
        json const run = {{"step", step}, {"optimizer", {{"steps_taken", step}}}, {"data", {{"position", 100 * step},
                                                                                           {"epoch", 0}}}};
        return save_checkpoint(grid, byte_micro(), {params, exp_avg, exp_avg_sq}, step, run,
                               {dir, 0, max_file_bytes});
    }

    // Loads `folder` and says whether it holds exactly this state.
    bool loads_as_saved(fs::path const& folder) {
        SerialState loaded(0);
        CheckpointReader reader(folder);
        reader.verify(grid.comm(Group::world));
        reader.read_local(layout, {loaded.params, loaded.exp_avg, loaded.exp_avg_sq});
        return loaded.params == params && loaded.exp_avg == exp_avg && loaded.exp_avg_sq == exp_avg_sq;
    }
};

// The runs a checkpoint reads and sends: consecutive serial indices, covering every local element, on every
// position of grids that split rows, columns and Z chunks mid-row.
TEST(Checkpoint, SerialRunsAreConsecutiveAndCoverEveryElement) {
    for (GridShape const shape : {GridShape{1, 2, 2, 2}, GridShape{1, 4, 1, 2}, GridShape{1, 1, 4, 2},
                                  GridShape{1, 8, 1, 1}, GridShape{2, 3, 1, 1}}) {
        for (int z = 0; z < shape.z; ++z) {
            for (int y = 0; y < shape.y; ++y) {
                for (int x = 0; x < shape.x; ++x) {
                    GptConfig config = byte_micro();
                    config.n_head = 4;
                    config.n_embd = 48;
                    ShardLayout const layout = gpt_layout(config, GridPosition{shape, 0, z, y, x});
                    for (int id = 0; id < layout.count(); ++id) {
                        std::string const& name = layout.param(id).name;
                        std::int64_t runs = 0;
                        for (std::int64_t i = 0; i < layout.local_numel(id); ++runs) {
                            std::int64_t const run = layout.serial_run(id, i);
                            ASSERT_GE(run, 1);
                            for (std::int64_t k = 0; k < run; ++k) {
                                ASSERT_EQ(layout.serial_index(id, i + k), layout.serial_index(id, i) + k)
                                    << name << " at " << i + k;
                            }
                            i += run;
                        }
                        EXPECT_GE(runs, 1);
                    }
                }
            }
        }
    }
}

TEST(Checkpoint, WeightsAndMomentsLoadBackBitwise) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const folder = state.save(dir.path(), 3);
    EXPECT_EQ(folder, dir / "step_00000003");
    EXPECT_TRUE(fs::exists(folder / "COMPLETE"));
    EXPECT_FALSE(fs::exists(dir / "step_00000003.partial"));
    std::size_t files = 0;
    for (auto const& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() != ".safetensors") continue;
        ++files;
        EXPECT_LE(fs::file_size(entry.path()), (64u << 10) + 4096) << "a file beyond the bound (plus its header)";
    }
    EXPECT_GT(files, 1u) << "the model is larger than one 64 KiB file";
    EXPECT_TRUE(state.loads_as_saved(folder));
    CheckpointReader reader(folder);
    EXPECT_TRUE(reader.has_training_state());
    EXPECT_EQ(reader.index().step, 3);
    EXPECT_EQ(reader.index().run["data"]["position"], 300);
}

TEST(Checkpoint, KeepLeavesTheNewestAndRemovesInterruptedSaves) {
    testing::TempDir dir;
    SerialState state(7);
    for (int step : {1, 2, 3}) state.save(dir.path(), step);
    fs::create_directories(dir / "step_00000009.partial");
    fs::create_directories(dir / "step_00000000.pruned");  // a removal a kill cut short
    std::ofstream(dir / "step_00000000.pruned" / "index.json") << "{}";
    prune_checkpoints(dir.path(), 2);
    std::vector<std::int64_t> steps;
    for (auto const& entry : complete_checkpoints(dir.path())) steps.push_back(entry.step);
    EXPECT_EQ(steps, (std::vector<std::int64_t>{2, 3}));
    for (char const* gone :
         {"step_00000009.partial", "step_00000000.pruned", "step_00000001", "step_00000001.pruned"}) {
        EXPECT_FALSE(fs::exists(dir / gone)) << gone;
    }
    EXPECT_EQ(resolve_checkpoint("latest", dir.path()), dir / "step_00000003");
    EXPECT_EQ(resolve_checkpoint(dir.path().string(), {}), dir / "step_00000003");
}

// Out of file descriptors, a folder of checkpoints that could not be listed was called "neither a checkpoint (no
// index.json) nor a folder of checkpoints: check CKPT" (export under a low ulimit -n): the limit is named instead.
TEST(Checkpoint, AFolderOfCheckpointsUnreadForWantOfDescriptorsNamesTheLimit) {
    testing::TempDir dir;
    SerialState(7).save(dir.path(), 2);
    for (std::string const& spec : {dir.path().string(), std::string("latest")}) {
        std::string const error =
            testing::error_with_no_descriptors_left([&] { resolve_checkpoint(spec, dir.path(), "CKPT"); });
        EXPECT_NE(error.find(fmt::format("folder {} cannot be opened: this process has as many files open as it may "
                                         "(ulimit -n {})",
                                         dir.path().string(), testing::few_descriptors)),
                  std::string::npos)
            << error;
    }
    EXPECT_EQ(resolve_checkpoint(dir.path().string(), {}), dir / "step_00000002");
}

// A leftover's name on a folder of other files (a user's export named step_N.partial by hand) is not a leftover:
// the pruning leaves it, where it removed the export with the next save.
TEST(Checkpoint, KeepRemovesOnlyLeftoversOfCheckpointFiles) {
    testing::TempDir dir;
    SerialState state(7);
    for (int step : {1, 2}) state.save(dir.path(), step);
    fs::create_directories(dir / "step_00000012.partial");
    std::ofstream(dir / "step_00000012.partial" / "config.json") << "{}";
    fs::create_directories(dir / "step_00000013.partial");  // a save cut short: its files, one still being written
    std::ofstream(dir / "step_00000013.partial" / "rank00000-000.safetensors") << "x";
    std::ofstream(dir / "step_00000013.partial" / "rank00001-000.safetensors.partial") << "x";
    prune_checkpoints(dir.path(), 1);
    EXPECT_TRUE(fs::exists(dir / "step_00000012.partial" / "config.json"));
    EXPECT_FALSE(fs::exists(dir / "step_00000013.partial"));
    EXPECT_FALSE(fs::exists(dir / "step_00000001"));
}

// A pruned checkpoint that is a symbolic link to one kept elsewhere: the link goes, and the checkpoint it names
// stays whole (its completion marker was removed through the link).
TEST(Checkpoint, KeepRemovesALinkAndNotWhatItNames) {
    testing::TempDir dir;
    SerialState state(7);
    fs::create_directories(dir / "run");
    fs::path const kept_elsewhere = state.save(dir.path(), 1);
    fs::rename(kept_elsewhere, dir / "elsewhere");
    fs::create_directory_symlink(dir / "elsewhere", dir / "run" / "step_00000001");
    fs::create_directory_symlink(dir / "elsewhere", dir / "run" / "step_00000004.partial");  // a leftover's name
    for (int step : {2, 3}) state.save(dir / "run", step);
    prune_checkpoints(dir / "run", 2);
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "run" / "step_00000001")));
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "run" / "step_00000004.partial")));
    EXPECT_TRUE(fs::exists(dir / "elsewhere" / "COMPLETE"));
    EXPECT_TRUE(state.loads_as_saved(dir / "elsewhere"));
}

// What a --ckpt-dir must not hold under a checkpoint's name, refused before a run touches the folder: a file (a
// save replaced it), a link to nothing (the save failed on it with the system's words), and a checkpoint renamed by
// hand (--resume latest took it for its name's step, and the rollback to its real step set every other aside).
TEST(Checkpoint, WhatIsNamedAsACheckpointMustBeOneOfThatStep) {
    SerialState state(7);
    struct Case {
        char const* name;
        std::function<void(fs::path const&)> make;
        char const* expected;
    };
    for (Case const& c :
         {Case{"file", [](fs::path const& dir) { write_file(dir / "step_00000001", "precious"); },
               "holds step_00000001, which is named as a checkpoint but is a regular file"},
          Case{"dangling_link", [](fs::path const& dir) { fs::create_symlink("nowhere", dir / "step_00000001"); },
               "holds step_00000001, which is named as a checkpoint but is a symbolic link to nothing"},
          Case{"renamed", [&](fs::path const& dir) { fs::rename(state.save(dir, 1), dir / "step_00000009"); },
               "holds step_00000009, a checkpoint whose COMPLETE says \"step 1\": its name and its step disagree"}}) {
        testing::TempDir dir;
        c.make(dir.path());
        std::string const error = error_of([&] { require_step_folders_are_checkpoints(dir.path(), "--ckpt-dir"); });
        EXPECT_NE(error.find(c.expected), std::string::npos) << c.name << ": " << error;
    }
    testing::TempDir whole;
    state.save(whole.path(), 2);
    EXPECT_NO_THROW(require_step_folders_are_checkpoints(whole.path(), "--ckpt-dir"));
}

TEST(Checkpoint, SavingAStepAgainReplacesIt) {
    testing::TempDir dir;
    SerialState first(7), second(8);
    first.save(dir.path(), 4);
    second.save(dir.path(), 4);
    EXPECT_TRUE(second.loads_as_saved(dir / "step_00000004"));
    EXPECT_FALSE(fs::exists(dir / "step_00000004.replaced"));
}

// The first safetensors file of a checkpoint, and its index entry rewritten to match new contents (so that the
// damage gets past the checksum to the parser behind it).
fs::path first_file(fs::path const& folder) { return folder / "rank00000-000.safetensors"; }

void record_in_index(fs::path const& folder, fs::path const& file) {
    std::string const bytes = file_bytes(file);
    json index = json::parse(file_bytes(folder / "index.json"));
    index["files"][file.filename().string()] = {
        {"bytes", bytes.size()},
        {"crc32", crc32_z(crc32_z(0, nullptr, 0), reinterpret_cast<unsigned char const*>(bytes.data()), bytes.size())}};
    write_file(folder / "index.json", index.dump());
}

struct DamagedCheckpoint {
    char const* name;
    std::function<void(fs::path const&)> damage;
    char const* expected;
};

std::vector<DamagedCheckpoint> const damaged_checkpoints = {
    {"truncated_file", [](fs::path const& f) { fs::resize_file(first_file(f), fs::file_size(first_file(f)) - 100); },
     "is not the"},
    {"flipped_bit",
     [](fs::path const& f) {
         std::string bytes = file_bytes(first_file(f));
         bytes[bytes.size() - 5] ^= 0x10;
         write_file(first_file(f), bytes);
     },
     "does not match its CRC-32"},
    {"missing_shard", [](fs::path const& f) { fs::remove(first_file(f)); }, "is missing"},
    {"offsets_outside_the_file",
     [](fs::path const& f) {
         // The first tensor's end, every digit made a 9: far past the data, and the header keeps its length.
         std::string bytes = file_bytes(first_file(f));
         std::size_t at = bytes.find("\"data_offsets\":[0,") + 18;
         for (; std::isdigit(static_cast<unsigned char>(bytes[at])); ++at) bytes[at] = '9';
         write_file(first_file(f), bytes);
         record_in_index(f, first_file(f));
     },
     "outside the"},
    {"absurd_shape",
     [](fs::path const& f) {
         json index = json::parse(file_bytes(f / "index.json"));
         index["tensors"]["wte"]["shape"] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
         write_file(f / "index.json", index.dump());
     },
     "absurd shape"},
    {"truncated_index",
     [](fs::path const& f) { fs::resize_file(f / "index.json", fs::file_size(f / "index.json") / 2); },
     "its index.json is unusable"},
    {"index_pointing_outside_the_folder",
     [](fs::path const& f) {
         std::string text = file_bytes(f / "index.json");
         for (std::size_t at; (at = text.find("rank00000-000")) != std::string::npos;) text.replace(at, 13, "../../passwd");
         write_file(f / "index.json", text);
     },
     "not a plain name"},
    {"interrupted_save", [](fs::path const& f) { fs::remove(f / "COMPLETE"); }, "is incomplete"},
    {"step_past_every_signed_integer",
     [](fs::path const& f) {
         json index = json::parse(file_bytes(f / "index.json"));
         index["step"] = std::uint64_t{1} << 63;  // shown as written, not as the negative number it wraps to
         write_file(f / "index.json", index.dump());
     },
     "\"step\" = 9223372036854775808 lies outside [0, "},
    {"index_naming_its_step_twice",
     [](fs::path const& f) {
         std::string text = file_bytes(f / "index.json");
         text.insert(1, "\"step\": 1, ");  // nlohmann alone would keep the later value and say nothing
         write_file(f / "index.json", text);
     },
     "names the key \"step\" twice"},
    {"marker_of_another_step", [](fs::path const& f) { testing::write_file(f / "COMPLETE", "step 9\n"); },
     "its COMPLETE marker reads \"step 9\", but its index is of step"},
    // Its first line alone was shown: "reads \"step 3\", but its index is of step 3".
    {"marker_of_two_lines", [](fs::path const& f) { testing::write_file(f / "COMPLETE", "step 3\nstep 3"); },
     "its COMPLETE marker reads \"step 3?step 3\", but its index is of step"},
    {"parts_larger_than_their_file",
     [](fs::path const& f) {
         json index = json::parse(file_bytes(f / "index.json"));
         index["files"]["rank00000-000.safetensors"]["bytes"] = 100;
         write_file(f / "index.json", index.dump());
     },
     "more than the file's 100"},
    {"model_of_an_unknown_family",
     [](fs::path const& f) {
         json index = json::parse(file_bytes(f / "index.json"));
         index["model"]["family"] = "mamba";
         write_file(f / "index.json", index.dump());
     },
     "unknown family 'mamba'"},
    {"llama_model_without_its_config",
     [](fs::path const& f) {
         json index = json::parse(file_bytes(f / "index.json"));
         index["model"]["family"] = "llama";
         write_file(f / "index.json", index.dump());
     },
     "model has no \"config\""},
};

// `axonn train` on 3000 byte tokens written into dir/data, for `steps` steps, resuming the checkpoint named next.
std::string resuming_train_command(fs::path const& dir, int steps) {
    fs::create_directories(dir / "data");
    std::vector<std::int32_t> tokens(3000);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 5 % 256);
    write_token_shard(dir / "data" / "train.bin", tokens, 16);
    return (fs::path(AXONN_BUILD_DIR) / "axonn").string() + " train --data " + (dir / "data").string() +
           " --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps " + std::to_string(steps) + " --resume ";
}

class DamagedCheckpoints : public ::testing::TestWithParam<DamagedCheckpoint> {};

TEST_P(DamagedCheckpoints, AreRefusedAndThePreviousOneStillLoads) {
    testing::TempDir dir;
    SerialState earlier(7), later(8);
    fs::path const previous = earlier.save(dir.path(), 1);
    fs::path const damaged = later.save(dir.path(), 2);
    GetParam().damage(damaged);

    std::string const error = error_of([&] { later.loads_as_saved(damaged); });
    EXPECT_NE(error.find(GetParam().expected), std::string::npos) << error;
    EXPECT_NE(error.find(previous.string()), std::string::npos) << "the error does not name the previous one: " << error;

    // The command refuses it with one line, and the previous checkpoint resumes.
    std::string const train = resuming_train_command(dir.path(), 3);
    fs::path const err = dir / "stderr.txt";
    int status = std::system((train + damaged.string() + " > /dev/null 2> " + err.string()).c_str());
    std::string const printed = file_bytes(err);
    EXPECT_EQ(WEXITSTATUS(status), 1) << printed;
    EXPECT_EQ(printed.rfind("axonn: error: checkpoint ", 0), 0u) << printed;
    EXPECT_EQ(printed.find('\n'), printed.size() - 1) << "not one line: " << printed;
    EXPECT_TRUE(earlier.loads_as_saved(previous));
    status = std::system((train + previous.string() + " > /dev/null 2> " + err.string()).c_str());
    EXPECT_EQ(WEXITSTATUS(status), 0) << file_bytes(err);
}

INSTANTIATE_TEST_SUITE_P(Hostile, DamagedCheckpoints, ::testing::ValuesIn(damaged_checkpoints),
                         [](auto const& info) { return std::string(info.param.name); });

// A rollback refused, for the checkpoint's data (its position 4000 lies past the 3000 tokens of --data) or for an
// output (--metrics naming a folder, --trace in a folder that does not exist), leaves the folder as it was: the
// later checkpoint is not set aside, and `--resume latest` still takes it; the metrics file is not cut, even with
// --overwrite.
TEST(Checkpoint, ARefusedRollbackChangesNothing) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const earlier = state.save(dir / "ckpt", 40);
    state.save(dir / "ckpt", 50);
    fs::create_directories(dir / "a_folder");
    fs::path const err = dir / "stderr.txt", metrics = dir / "metrics.jsonl";
    std::string const records = "{\"step\": 45, \"loss\": 1.0}\n";
    std::ofstream(metrics) << records;
    for (auto const& [options, refusal] :
         {std::pair<std::string, std::string>{"", "was trained on other data"},
          std::pair<std::string, std::string>{" --new-data --metrics " + (dir / "a_folder").string(),
                                              "--metrics " + (dir / "a_folder").string() + " is a folder"},
          std::pair<std::string, std::string>{" --new-data --overwrite --metrics " + metrics.string() + " --trace " +
                                                  (dir / "absent" / "trace.json").string(),
                                              "the folder " + (dir / "absent").string() + " does not exist"}}) {
        std::string const command = resuming_train_command(dir.path(), 60) + earlier.string() + " --ckpt-dir " +
                                    (dir / "ckpt").string() + options + " > /dev/null 2> " + err.string();
        int const status = std::system(command.c_str());
        EXPECT_EQ(WEXITSTATUS(status), 1) << file_bytes(err);
        EXPECT_NE(file_bytes(err).find(refusal), std::string::npos) << file_bytes(err);
        std::vector<std::string> names;
        for (auto const& entry : fs::directory_iterator(dir / "ckpt")) {
            names.push_back(entry.path().filename().string());
        }
        std::sort(names.begin(), names.end());
        EXPECT_EQ(names, (std::vector<std::string>{"step_00000040", "step_00000050"})) << refusal;
        EXPECT_EQ(file_bytes(metrics), records) << refusal;
    }
}

// A moment of AdamW or a weight that is not finite (saved with its checksum, so no damage the checksums show) is
// named as the checkpoint's damage: a NaN moment made the first update's weights NaN and the run "diverged",
// blamed on the learning rate; a NaN weight in a row the data never reads trained on unseen. Resumed, and read by
// `generate` and `--init-from`.
TEST(Checkpoint, AMomentOrAWeightThatIsNotFiniteIsNamed) {
    testing::TempDir dir;
    std::string const data = resuming_train_command(dir.path(), 4);  // makes the data
    for (bool const moment : {true, false}) {
        SerialState state(7);
        (moment ? state.exp_avg_sq : state.params)[state.layout.offset(2) + 1] = std::numeric_limits<float>::quiet_NaN();
        fs::path const folder = state.save(dir / (moment ? "moment" : "weight"), 2);
        std::string const named = moment ? "its AdamW state exp_avg_sq." + state.layout.param(2).name
                                         : "its weight " + state.layout.param(2).name;
        std::string const axonn = (fs::path(AXONN_BUILD_DIR) / "axonn").string();
        std::vector<std::string> commands = {data + folder.string()};
        if (!moment) {
            commands.push_back(axonn + " generate --tokenizer byte --prompt x --max-new-tokens 2 --model-dir " +
                               folder.string());
            commands.push_back(axonn + " train --data " + (dir / "data").string() +
                               " --tokenizer byte --sample-tokens 0 --steps 2 --init-from " + folder.string());
        }
        for (std::string const& command : commands) {
            SCOPED_TRACE(command);
            fs::path const err = dir / "stderr.txt";
            int const status = std::system((command + " > /dev/null 2> " + err.string()).c_str());
            EXPECT_EQ(WEXITSTATUS(status), 1) << file_bytes(err);
            EXPECT_NE(file_bytes(err).find(named + " holds a value that is not finite (NaN or infinite)"),
                      std::string::npos)
                << file_bytes(err);
        }
    }
}

// A rollback names the run's own checkpoint through a link as well as by its path: the later checkpoint is set
// aside (it was refused as another run's, the link's folder not being --ckpt-dir).
TEST(Checkpoint, ARollbackThroughALinkToTheRunsOwnCheckpointIsARollback) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const earlier = state.save(dir / "ckpt", 2);
    state.save(dir / "ckpt", 4);
    fs::create_directory_symlink(earlier, dir / "link");
    fs::path const out = dir / "stdout.txt", err = dir / "stderr.txt";
    std::string const command = resuming_train_command(dir.path(), 3) + (dir / "link").string() + " --ckpt-dir " +
                                (dir / "ckpt").string() + " --new-data > " + out.string() + " 2> " + err.string();
    int const status = std::system(command.c_str());
    ASSERT_EQ(WEXITSTATUS(status), 0) << file_bytes(err);
    EXPECT_NE(file_bytes(out).find("rolling back to step 2: the later checkpoints are kept aside as "
                                   "step_00000004.rolled-back-"),
              std::string::npos)
        << file_bytes(out);
    std::vector<std::int64_t> steps;
    for (CheckpointEntry const& entry : complete_checkpoints(dir / "ckpt")) steps.push_back(entry.step);
    EXPECT_EQ(steps, (std::vector<std::int64_t>{2, 3}));
}

// Settings a run state records only for a resume to compare, with values no run writes: the checkpoint is damaged
// (a resume used to echo them in a warning and go on).
TEST(Checkpoint, ImpossibleRecordedSettingsAreDamage) {
    struct Edit {
        char const* key;
        json value;
        char const* expected;
    };
    for (Edit const& edit : {Edit{"batch", 0, "its run state's batch is 0, not an integer in [1, "},
                             Edit{"seq", 1000000, "its run state's seq is 1000000, not an integer in [1, 64]"},
                             Edit{"precision", "fp8", "its run state's precision is \"fp8\", neither fp32 nor bf16"},
                             Edit{"tokenizer", 3, "its run state's tokenizer is 3, not a string"},
                             // A resume warned of a changed setting ("--seed 1337 (was \"x\")") and went on.
                             Edit{"seed", "x", "its run state's seed is \"x\", not a non-negative integer"},
                             Edit{"seed", -5, "its run state's seed is -5, not a non-negative integer"},
                             Edit{"goldfish", "k=0", "its run state's goldfish is \"k=0\" ("},
                             Edit{"schedule", json{{"max_lr", "fast"}}, "its run state's schedule.max_lr is \"fast\", "
                                                                        "not a number"},
                             Edit{"run_id", "zz", "its run state's run_id is \"zz\", not 16 hex digits"},
                             Edit{"lineage", "x", "its run state's lineage is \"x\", not a list"},
                             Edit{"lineage", json::parse(R"([{"from_step": 1, "launch": "00000000000000bb"},
                                                             {"from_step": 0, "launch": "00000000000000cc"}])"),
                                  "its run state's lineage holds {\"from_step\":0,\"launch\":\"00000000000000cc\"}, "
                                  "not a launch {\"from_step\", \"launch\": 16 hex digits} in step order, from a step "
                                  "up to its own (1)"},
                             Edit{"lineage", json::parse(R"([{"from_step": 7, "launch": "00000000000000bb"}])"),
                                  "lineage holds {\"from_step\":7,"},
                             Edit{"lineage", json::parse(R"([{"from_step": 0, "launch": "a\nb"}])"),
                                  "lineage holds {\"from_step\":0,\"launch\":\"a\\nb\"}"}}) {
        testing::TempDir dir;
        SerialState state(7);
        json run = {{"step", 1}, {"optimizer", {{"steps_taken", 1}}}, {"data", {{"position", 100}, {"epoch", 0}}}};
        run[edit.key] = edit.value;
        fs::path const folder = save_checkpoint(state.grid, byte_micro(), {state.params, state.exp_avg,
                                                state.exp_avg_sq}, 1, run, {dir / "ckpt"});
        fs::path const err = dir / "stderr.txt";
        int const status =
            std::system((resuming_train_command(dir.path(), 3) + folder.string() + " > /dev/null 2> " + err.string())
                            .c_str());
        EXPECT_EQ(WEXITSTATUS(status), 1) << edit.key;
        EXPECT_NE(file_bytes(err).find(edit.expected), std::string::npos) << file_bytes(err);
    }
}

TEST(Checkpoint, ACheckpointOfAnotherModelIsRefusedForResuming) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const folder = state.save(dir.path(), 2);
    TrainOptions options;
    GptConfig deeper = byte_micro();
    deeper.n_layer = 3;
    options.model = deeper;
    options.resume = folder.string();
    options.steps = 10;
    std::string const error = error_of([&] { open_resume_checkpoint(options); });
    EXPECT_NE(error.find("is of another model: layers 2 (here 3)"), std::string::npos) << error;
    options.model = byte_micro();
    options.steps = 1;
    EXPECT_NE(error_of([&] { open_resume_checkpoint(options); }).find("past --steps 1"), std::string::npos);
}

TEST(Checkpoint, ARunRefusesAFolderWithAnotherRunsLaterCheckpoints) {
    testing::TempDir dir;
    SerialState state(7);
    state.save(dir.path(), 5);
    std::string const error = error_of([&] { require_no_later_checkpoints(dir.path(), 0); });
    EXPECT_NE(error.find("holds checkpoints of later steps than this run starts from (step 0)"), std::string::npos)
        << error;
    EXPECT_NO_THROW(require_no_later_checkpoints(dir.path(), 5));
}

// Rolling back twice within one second: the second set of later checkpoints and logs gets a mark of its own, one
// for all of them, though only one of them had its name taken (the names of this second and the next are taken
// beforehand, so the test does not depend on the clock).
TEST(Checkpoint, RollbacksInTheSameSecondKeepEveryLaterCheckpointAsideUnderOneMark) {
    testing::TempDir dir;
    SerialState state(7);
    auto const now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    for (auto const stamp : {now, now + 1}) {
        fs::path const earlier = dir / fmt::format("step_00000004.rolled-back-{}", stamp);
        fs::create_directories(earlier);
        testing::write_file(earlier / checkpoint_complete_file, "step 4\n");
    }
    state.save(dir.path(), 4);
    testing::write_file(dir / "metrics.jsonl", "{\"step\": 1}\n");
    std::vector<fs::path> const later = rolled_back_checkpoints(dir.path(), 2, dir / "step_00000002");
    ASSERT_EQ(later, (std::vector<fs::path>{dir / "step_00000004"}));
    std::string const mark = rollback_mark({later[0], dir / "metrics.jsonl"});
    EXPECT_TRUE(mark.ends_with("-2")) << mark;
    RollbackAside aside(mark);
    EXPECT_EQ(aside.copy(dir / "metrics.jsonl"), dir / ("metrics.jsonl" + mark));
    EXPECT_EQ(aside.rename(later[0]), dir / ("step_00000004" + mark));
    EXPECT_TRUE(fs::exists(dir / ("step_00000004" + mark) / checkpoint_complete_file));
    EXPECT_TRUE(complete_checkpoints(dir.path()).empty());
}

// A log a rollback continues is copied aside whole; the file itself is left as it was (the run cuts it). A step
// that fails (a copy onto a name that is taken, a checkpoint that cannot be renamed) is an error naming both, and
// undo() puts back what the rollback did before it: the checkpoints renamed back, the copies removed.
TEST(Checkpoint, ARollbackThatCannotFinishIsUndone) {
    testing::TempDir dir;
    SerialState state(7);
    state.save(dir.path(), 4);
    state.save(dir.path(), 6);
    std::string const records = "{\"step\": 1}\n{\"step\": 2}\n";
    testing::write_file(dir / "metrics.jsonl", records);
    testing::write_file(dir / "trace.json", "{}");
    testing::write_file(dir / "trace.json.rolled-back-7", "another rollback's copy\n");
    RollbackAside aside(".rolled-back-7");
    fs::path const copy = aside.copy(dir / "metrics.jsonl");
    EXPECT_EQ(testing::file_bytes(copy), records);
    EXPECT_EQ(testing::file_bytes(dir / "metrics.jsonl"), records);
    std::string const taken = error_of([&] { aside.copy(dir / "trace.json"); });
    EXPECT_EQ(taken, fmt::format("cannot set the later records of {} aside: the name {} is taken",
                                 (dir / "trace.json").string(), (dir / "trace.json.rolled-back-7").string()));
    EXPECT_EQ(testing::file_bytes(dir / "trace.json.rolled-back-7"), "another rollback's copy\n");
    aside.rename(dir / "step_00000004");
    fs::create_directories(dir / "step_00000006.rolled-back-7");
    std::string const renamed = error_of([&] { aside.rename(dir / "step_00000006"); });
    EXPECT_NE(renamed.find("cannot set " + (dir / "step_00000006").string() + " aside"), std::string::npos) << renamed;

    EXPECT_EQ(aside.undo(), "");
    std::vector<std::int64_t> steps;
    for (auto const& entry : complete_checkpoints(dir.path())) steps.push_back(entry.step);
    EXPECT_EQ(steps, (std::vector<std::int64_t>{4, 6}));
    EXPECT_FALSE(fs::exists(copy));
    EXPECT_FALSE(fs::exists(dir / "step_00000004.rolled-back-7"));
    EXPECT_EQ(testing::file_bytes(dir / "trace.json.rolled-back-7"), "another rollback's copy\n") << "not its copy";
}

// Resumed from a checkpoint an earlier rollback set aside (branch 1's step 20), a run also sets aside the checkpoint
// of that step in the folder (branch 2's), which a later rollback to step 20 would otherwise take for its own.
TEST(Checkpoint, ARollbackToACheckpointSetAsideKeepsAnotherBranchsOfItsStepAside) {
    testing::TempDir dir;
    SerialState first_branch(7), second_branch(8);
    first_branch.save(dir.path(), 15);
    second_branch.save(dir.path(), 20);
    second_branch.save(dir.path(), 25);
    first_branch.save(dir.path() / "aside", 20);
    fs::rename(dir / "aside" / "step_00000020", dir / "step_00000020.rolled-back-1");
    std::vector<fs::path> const later =
        rolled_back_checkpoints(dir.path(), 20, dir / "step_00000020.rolled-back-1");
    EXPECT_EQ(later, (std::vector<fs::path>{dir / "step_00000020", dir / "step_00000025"}));
    RollbackAside aside(rollback_mark(later));
    for (fs::path const& checkpoint : later) aside.rename(checkpoint);
    std::vector<std::int64_t> steps;
    for (auto const& entry : complete_checkpoints(dir.path())) steps.push_back(entry.step);
    EXPECT_EQ(steps, (std::vector<std::int64_t>{15}));
    // Resumed from the checkpoint of its step in the folder itself, nothing of that step moves.
    second_branch.save(dir.path(), 30);
    EXPECT_TRUE(rolled_back_checkpoints(dir.path(), 30, dir / "step_00000030").empty());
}

TEST(Checkpoint, KeepNeverRemovesTheCheckpointJustSaved) {
    testing::TempDir dir;
    SerialState state(7);
    for (int step : {7, 8, 2}) state.save(dir.path(), step);  // 2 saved last, yet the oldest by step
    prune_checkpoints(dir.path(), 1, 2);
    std::vector<std::int64_t> steps;
    for (auto const& entry : complete_checkpoints(dir.path())) steps.push_back(entry.step);
    EXPECT_EQ(steps, (std::vector<std::int64_t>{2, 8}));
}

// The size of the largest shard file (*.safetensors) of the checkpoint in `folder`.
std::uintmax_t largest_shard(fs::path const& folder) {
    std::uintmax_t largest = 0;
    for (auto const& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() == ".safetensors") largest = std::max(largest, entry.file_size());
    }
    return largest;
}

// A --ckpt-dir on a file system without room for the run's saves was found full by a save, after the training; it is
// refused before any work, with the room there and the room the saves take (12 bytes a parameter, the files' headers
// and index; as many checkpoints as are held at once: checkpoint_room, below). Checked on this machine's own temporary folder: a
// model that outgrows what it has free is refused, one that fits is not, and a folder not made yet is measured where
// it would be made. (Free space can change meanwhile: the sizes keep far from the edge.)
TEST(Checkpoint, AFolderWithoutRoomForTheSavesIsRefusedBeforeTheRun) {
    testing::TempDir dir;
    fs::path const folder = dir / "not" / "made" / "yet";
    std::optional<std::uint64_t> const free = free_bytes_for(folder);
    ASSERT_TRUE(free.has_value());
    ASSERT_GT(*free, 12u * 1000u) << "the temporary folder has no room for a small checkpoint";
    EXPECT_NO_THROW(require_room_for_checkpoints(folder, {1000, 4, 2, 1}));
    // Each checkpoint 0.6 of the room free: one fits, two do not.
    auto const parameters = static_cast<std::int64_t>(*free / 20);
    EXPECT_NO_THROW(require_room_for_checkpoints(folder, {parameters, 1, 1, 1}));
    std::string const two = testing::error_of([&] { require_room_for_checkpoints(folder, {parameters, 1, 2, 1}); });
    EXPECT_NE(two.find("--ckpt-dir " + folder.string() + " has "), std::string::npos) << two;
    EXPECT_NE(two.find(" free, less than this run's saves need (about "), std::string::npos) << two;
    EXPECT_NE(two.find(": 2 checkpoints (--keep 1: each save is written whole before an older one is pruned), each "
                       "the weights"),
              std::string::npos)
        << two;
    EXPECT_NE(two.find("free space there, keep fewer checkpoints (--keep, --ckpt-every), or choose another folder"),
              std::string::npos)
        << two;
    std::string const all = testing::error_of([&] { require_room_for_checkpoints(folder, {parameters, 1, 4, 0}); });
    EXPECT_NE(all.find(": 4 checkpoints (--keep 0, the default, keeps every save of the run), each"), std::string::npos)
        << all;
    auto const outgrowing = static_cast<std::int64_t>(*free / 6);  // twice the room free
    std::string const one = testing::error_of([&] { require_room_for_checkpoints(folder, {outgrowing, 1, 1, 0}); });
    EXPECT_NE(one.find(": one checkpoint, the weights"), std::string::npos) << one;
    EXPECT_NE(one.find("free space there, or choose another folder"), std::string::npos) << one;
    EXPECT_FALSE(fs::exists(dir / "not")) << "the check made the folder";
}

// How many new checkpoints a launch's saves hold at once, table-driven: one where it saves once; with --keep 0 (the
// default: all kept) every save of the launch (a run of 20 steps saving every 5 passed the check made for two and
// found the disk full at step 15); with --keep K at most K + 1, less the run's checkpoints already in the folder,
// which the first save's pruning removes (a resumed run with --keep 1 was refused room for two new ones), and at
// least the one being written.
TEST(Checkpoint, TheCheckpointsHeldAtOnceFollowKeepAndCkptEvery) {
    struct Case {
        int steps, ckpt_every, keep;
        std::int64_t start_step, kept, held;
    };
    for (Case const c : {Case{20, 0, 0, 0, 0, 1}, Case{20, 5, 0, 0, 0, 4}, Case{20, 5, 0, 10, 3, 2},
                         Case{20, 5, 1, 0, 0, 2}, Case{20, 5, 3, 0, 0, 4}, Case{20, 5, 9, 0, 0, 4},
                         Case{20, 20, 0, 0, 0, 1}, Case{20, 7, 0, 0, 0, 3}, Case{20, 5, 0, 20, 4, 1},
                         Case{20, 5, 2, 17, 2, 1}, Case{20, 5, 1, 10, 1, 1}, Case{20, 5, 3, 0, 2, 2},
                         Case{20, 5, 1, 0, 5, 1}}) {
        TrainOptions options;
        options.steps = c.steps;
        options.ckpt_every = c.ckpt_every;
        options.keep = c.keep;
        CheckpointRoom const room = checkpoint_room(options, c.start_step, 3, c.kept);
        EXPECT_EQ(room.held_at_once, c.held) << c.steps << " steps every " << c.ckpt_every << ", --keep " << c.keep
                                             << ", from step " << c.start_step << " with " << c.kept << " kept";
        EXPECT_EQ(room.ranks, 3);
        EXPECT_EQ(room.keep, c.keep);
    }
}

// A save that failed (a full disk; here the file size limit, which fails a write alike) left its step_N.partial
// folder, and the shard files written before the failure with it, until the next save of the step. Now nothing of
// it is left, whether a shard or the index fails, and the earlier checkpoint is intact.
TEST(Checkpoint, ASaveThatFailsLeavesNothingOfItself) {
    testing::TempDir dir;
    SerialState state(7);
    std::uint64_t const small_files = 4096;  // many shard files, and an index that lists them all
    fs::path const sized = state.save(dir / "sized", 1, small_files);
    std::uintmax_t const shard_bytes = largest_shard(sized);
    ASSERT_GT(fs::file_size(sized / "index.json"), shard_bytes + 64) << "the index must outgrow the shards";
    fs::path const earlier = state.save(dir / "ckpt", 1, small_files);
    std::string const earlier_index = file_bytes(earlier / "index.json");
    struct Limit {
        char const* fails;
        rlim_t bytes;
    };
    for (Limit const limit : {Limit{"a shard", 100}, Limit{"the index", shard_bytes + 64}}) {
        auto const previous = std::signal(SIGXFSZ, SIG_IGN);  // as main does: the write fails, the process lives
        rlimit saved{};
        ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
        rlimit const few{limit.bytes, saved.rlim_max};
        ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &few), 0);
        std::string const error = error_of([&] { state.save(dir / "ckpt", 2, small_files); });
        ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
        std::signal(SIGXFSZ, previous);
        EXPECT_NE(error.find("ulimit -f"), std::string::npos) << limit.fails << ": " << error;
        EXPECT_FALSE(fs::exists(dir / "ckpt" / "step_00000002.partial")) << limit.fails;
        EXPECT_FALSE(fs::exists(dir / "ckpt" / "step_00000002")) << limit.fails;
        std::vector<CheckpointEntry> const complete = complete_checkpoints(dir / "ckpt");
        ASSERT_EQ(complete.size(), 1u) << limit.fails;
        EXPECT_EQ(file_bytes(earlier / "index.json"), earlier_index) << limit.fails;
        EXPECT_TRUE(state.loads_as_saved(earlier)) << limit.fails;
    }
}

// A save that replaces a checkpoint of its step (import --overwrite) and cannot complete (a full disk: its
// marker not written) put the earlier one under DEST.replaced and left an incomplete one in its place.
TEST(Checkpoint, AReplacementThatFailsPutsTheEarlierCheckpointBack) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const earlier = state.save(dir.path(), 3);
    std::string const earlier_index = file_bytes(earlier / "index.json");
    fs::path partial = earlier;
    partial += ".partial";
    fs::create_directories(partial);
    write_file(partial / "new.bin", "new");
    std::string const error = error_of([&] {
        move_checkpoint_into_place(partial, earlier, [] { fail("cannot write checkpoint marker: the disk is full"); });
    });
    EXPECT_NE(error.find("the disk is full"), std::string::npos) << error;
    std::vector<CheckpointEntry> const complete = complete_checkpoints(dir.path());
    ASSERT_EQ(complete.size(), 1u);
    EXPECT_EQ(complete[0].path, earlier);
    EXPECT_EQ(file_bytes(earlier / "index.json"), earlier_index);
    EXPECT_TRUE(fs::exists(partial / "new.bin"));
    fs::path replaced = earlier;
    replaced += ".replaced";
    EXPECT_FALSE(fs::exists(replaced));
    // Completed, the new folder takes the place and the earlier one is gone.
    move_checkpoint_into_place(partial, earlier, [&] { write_file(earlier / checkpoint_complete_file, "3\n"); });
    EXPECT_TRUE(fs::exists(earlier / "new.bin"));
    EXPECT_FALSE(fs::exists(replaced));
    EXPECT_FALSE(fs::exists(partial));
}

// A save's host copy that does not fit is an allocation failure like any other (std::bad_alloc), which the
// training run names as its save's: it was an Error that said only "for a copy".
TEST(Checkpoint, AHostCopyThatDoesNotFitIsBadAlloc) {
    EXPECT_THROW(HostBuffer(std::size_t{1} << 60), std::bad_alloc);
    EXPECT_EQ(HostBuffer(1000).floats().size(), 1000u);
}

TEST(Checkpoint, OneRunAtATimeWritesAFolder) {
    testing::TempDir dir;
    CheckpointDirLock const first(dir / "ckpt");
    EXPECT_NE(error_of([&] { CheckpointDirLock second(dir / "ckpt"); }).find("is in use by another run"),
              std::string::npos);
}

TEST(Checkpoint, AResumeThatChangesTheRunsSettingsIsNamed) {
    testing::TempDir dir;
    SerialState state(7);
    TrainOptions options;
    options.model = byte_micro();
    options.schedule.total_steps = 10;
    json const run = {{"step", 2},
                      {"batch", options.batch},
                      {"seq", 32},
                      {"val_data", ""},
                      {"schedule", {{"total_steps", 5}, {"max_lr", 0.0006f}}},
                      {"arithmetic", {{"micro_batch", 0}, {"logit_rows", 1024}, {"grad_comm", "fp32"},
                                      {"vocab_split", "auto"}, {"gemm_tuning", "off"}}},
                      {"validation", {{"ids", {"00000000000000ab"}}, {"tokens", 4096}}}};
    options.schedule.max_lr = 0.001f;
    options.val_data = "other/val.bin";
    // Step options that sum in another order: the run goes on within rounding, no longer bit for bit (they went
    // unnamed). Overlap, recomputation and cached weights change no bit and are not recorded.
    options.run.micro_batch = 2;
    options.run.model.logit_rows = 16;
    options.run.gemm_tuning = false;
    fs::path const folder = save_checkpoint(state.grid, byte_micro(), {state.params, state.exp_avg, state.exp_avg_sq},
                                            2, run, {dir.path()});
    std::vector<std::string> const changed = settings_changed_since(CheckpointReader(folder), options, std::nullopt);
    // Learning rates are floats, shown as such (not as the doubles 0.0010000000474974513 and 0.0006000000284984708).
    // The validation data is named when it changes, even with --val-data unchanged (`--data DIR/train.bin` after
    // `--data DIR`, which validated on DIR/val.bin).
    EXPECT_EQ(changed, (std::vector<std::string>{"--steps 10 (was 5)", "--lr 0.001 (was 0.0006)", "--seq 64 (was 32)",
                                                 "--micro-batch 2 (was 0)", "--logit-rows 16 (was 1024)",
                                                 "validation data none (was dataset 00000000000000ab of 4096 tokens; "
                                                 "pass --val-data to validate as it did)"}));
    // A checkpoint from before the validation data was recorded: the option is compared.
    json older = run;
    older.erase("validation");
    fs::path const old_folder = save_checkpoint(state.grid, byte_micro(),
                                                {state.params, state.exp_avg, state.exp_avg_sq}, 3, older, {dir.path()});
    EXPECT_EQ(settings_changed_since(CheckpointReader(old_folder), options, std::nullopt).back(),
              "--val-data \"other/val.bin\" (was \"\")");
}

// Options given otherwise that compute the same on this run's grid and batch are not changes (they were named):
// --micro-batch equal to the replica's share, --logit-rows beyond a pass's rows, --vocab-split xy where auto is xy.
TEST(Checkpoint, AResumeWithOptionsThatSumAlikeNamesNone) {
    testing::TempDir dir;
    SerialState state(7);
    TrainOptions options;
    options.model = byte_micro();
    json const run = {{"step", 2},
                      {"arithmetic", {{"micro_batch", 0}, {"logit_rows", 1024}, {"grad_comm", "fp32"},
                                      {"vocab_split", "auto"}, {"gemm_tuning", "on"}}}};
    fs::path const folder = save_checkpoint(state.grid, byte_micro(), {state.params, state.exp_avg, state.exp_avg_sq},
                                            2, run, {dir.path()});
    ASSERT_EQ(options.grid.batch_replicas(), 1);
    ASSERT_LE(options.batch * options.seq, 1024);  // one chunk of logits either way
    options.run.micro_batch = options.batch;
    options.run.model.logit_rows = 4096;
    options.run.model.vocab_split = VocabSplit::xy;  // auto takes xy where x = 1
    EXPECT_EQ(settings_changed_since(CheckpointReader(folder), options, std::nullopt), std::vector<std::string>{});
    // The same options, now computing otherwise: each is named.
    options.run.micro_batch = options.batch / 2;
    options.run.model.logit_rows = options.batch / 2 * options.seq - 1;
    options.run.model.vocab_split = VocabSplit::y;
    EXPECT_EQ(settings_changed_since(CheckpointReader(folder), options, std::nullopt),
              (std::vector<std::string>{fmt::format("--micro-batch {} (was 0)", options.batch / 2),
                                        fmt::format("--logit-rows {} (was 1024)", options.run.model.logit_rows),
                                        "--vocab-split \"y\" (was \"auto\")"}));
}

// A checkpoint with a run state but a moment missing is damaged, not weights only (which would send the user to
// --init-from and lose the optimizer without a word).
TEST(Checkpoint, AMissingMomentIsDamageNotWeightsOnly) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const folder = state.save(dir.path(), 3);
    json index = json::parse(file_bytes(folder / "index.json"));
    ASSERT_EQ(index["tensors"].erase("exp_avg_sq.wpe"), 1u);
    write_file(folder / "index.json", index.dump());
    std::string const error = error_of([&] { CheckpointReader(folder).has_training_state(); });
    EXPECT_NE(error.find("is damaged: it holds a run to resume, but not the AdamW moment exp_avg_sq.wpe of wpe"),
              std::string::npos)
        << error;
    EXPECT_EQ(error.find("weights only"), std::string::npos) << error;
}

TEST(Checkpoint, WeightsAloneCannotBeResumed) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const folder = save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir.path()});
    TrainOptions options;
    options.model = byte_micro();
    options.resume = folder.string();
    EXPECT_NE(error_of([&] { open_resume_checkpoint(options); }).find("holds weights only"), std::string::npos);
}

// Hugging Face's format in and out: import then export gives back the same file, byte for byte.
TEST(HuggingFace, ImportThenExportGivesTheSameTensors) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const saved = save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "a"});
    CheckpointReader original(saved);
    export_hf(original, dir / "hf");

    GptConfig const config = read_hf_gpt2_config(dir / "hf");
    EXPECT_TRUE(model_differences(config, byte_micro()).empty()) << model_differences(config, byte_micro());
    std::vector<float> imported(state.params.size());
    HfGpt2Weights(dir / "hf", config).read_local(state.layout, imported);
    // Equal to the saved weights, but for the embedding's padding rows, which the export leaves out.
    std::int64_t const real_rows_end = static_cast<std::int64_t>(config.vocab_size) * config.n_embd;
    for (std::size_t i = 0; i < imported.size(); ++i) {
        bool const padding = static_cast<std::int64_t>(i) >= real_rows_end &&
                             static_cast<std::int64_t>(i) < state.layout.local_numel(Param::wte);
        ASSERT_EQ(imported[i], padding ? 0.0f : state.params[i]) << "element " << i;
    }
    fs::path const again = save_checkpoint(state.grid, config, {imported, {}, {}}, 0, nullptr, {dir / "b"});
    CheckpointReader reimported(again);
    export_hf(reimported, dir / "hf2");
    EXPECT_TRUE(file_bytes(dir / "hf" / "model.safetensors") == file_bytes(dir / "hf2" / "model.safetensors"));
    EXPECT_EQ(file_bytes(dir / "hf" / "config.json"), file_bytes(dir / "hf2" / "config.json"));
}

// A copy of a Hugging Face folder with its tensors shared out over two shards and a model.safetensors.index.json,
// as transformers saves a large model. Returns the index as written.
json shard_hf_folder(fs::path const& from, fs::path const& to) {
    fs::create_directories(to);
    fs::copy_file(from / "config.json", to / "config.json");
    InputFile const input = open_input_file(from / "model.safetensors", "weights", "");
    SafetensorsHeader const header = read_safetensors_header(input, "weights");
    std::array<std::vector<SafetensorsEntry>, 2> entries;
    std::array<std::string, 2> data;
    json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
    for (std::size_t t = 0; t < header.tensors.size(); ++t) {
        SafetensorsEntry const& entry = header.tensors[t];
        std::string bytes(entry.end - entry.begin, '\0');
        read_exactly(input, header.data_start + entry.begin, bytes.data(), bytes.size(), "weights");
        entries[t % 2].push_back({entry.name, entry.dtype, entry.shape, 0, 0});
        data[t % 2] += bytes;
        index["weight_map"][entry.name] = fmt::format("model-0000{}-of-00002.safetensors", t % 2 + 1);
    }
    for (int shard = 0; shard < 2; ++shard) {
        write_file(to / fmt::format("model-0000{}-of-00002.safetensors", shard + 1),
                    safetensors_header_bytes(entries[shard]) + data[shard]);
    }
    write_file(to / "model.safetensors.index.json", index.dump());
    return index;
}

// Every rank of a z=2, y=2, x=2 grid reads its own shards of a Hugging Face folder, single-file or sharded, and
// gets exactly what the checkpoint it was exported from gives that rank (but for the embedding's padding rows,
// which the export leaves out and the import makes zero): the transposed (Conv1D) tensors picked from the stored
// rows that are its columns, the rest read as runs.
TEST(HuggingFace, EachRankReadsItsShardsOfOneFileOrOfShards) {
    testing::TempDir dir;
    SerialState state(7);
    fs::path const saved = save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "a"});
    CheckpointReader checkpoint(saved);
    export_hf(checkpoint, dir / "hf");
    shard_hf_folder(dir / "hf", dir / "sharded");
    GptConfig const config = read_hf_gpt2_config(dir / "sharded");
    GridShape const shape{.z = 2, .y = 2, .x = 2};
    for (int z = 0; z < 2; ++z) {
        for (int y = 0; y < 2; ++y) {
            for (int x = 0; x < 2; ++x) {
                ShardLayout const layout = gpt_layout(config, GridPosition{shape, 0, z, y, x});
                std::vector<float> expected(static_cast<std::size_t>(layout.total()));
                checkpoint.read_local(layout, {expected, {}, {}});
                for (char const* folder : {"hf", "sharded"}) {
                    std::vector<float> imported(expected.size(), -1.0f);
                    HfGpt2Weights(dir / folder, config).read_local(layout, imported);
                    for (int id = 0; id < layout.count(); ++id) {
                        ParamDecl const& param = layout.param(id);
                        for (std::int64_t i = 0; i < layout.local_numel(id); ++i) {
                            std::int64_t const row = layout.serial_index(id, i) % (param.rows * param.cols) / param.cols;
                            bool const padding = param.real_rows >= 0 && row >= param.real_rows;
                            std::size_t const at = static_cast<std::size_t>(layout.offset(id) + i);
                            ASSERT_EQ(imported[at], padding ? 0.0f : expected[at])
                                << folder << " " << param.name << "[" << i << "] at z" << z << " y" << y << " x" << x;
                        }
                    }
                }
            }
        }
    }
}

// The value of an IEEE 754 binary16 bit pattern, from the standard's formula (not from the code under test).
double binary16_value(std::uint16_t bits) {
    int const exponent = bits >> 10 & 0x1f, mantissa = bits & 0x3ff;
    double const magnitude =
        exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
    return bits & 0x8000 ? -magnitude : magnitude;
}

// Copies of a Hugging Face folder whose every tensor holds finite binary16 patterns (element i of tensor t the
// pattern (i · 40503 + t · 977) mod 63488, a sign every other element): stored as F16 in `f16`, and as the F32 of
// their values in `f32`.
void write_binary16_copies(fs::path const& from, fs::path const& f16, fs::path const& f32) {
    InputFile const input = open_input_file(from / "model.safetensors", "weights", "");
    SafetensorsHeader const header = read_safetensors_header(input, "weights");
    std::vector<SafetensorsEntry> narrow_entries, wide_entries;
    std::string narrow_data, wide_data;
    for (std::size_t t = 0; t < header.tensors.size(); ++t) {
        SafetensorsEntry const& entry = header.tensors[t];
        for (std::size_t i = 0; i < (entry.end - entry.begin) / sizeof(float); ++i) {
            auto const bits = static_cast<std::uint16_t>((i * 40503 + t * 977) % 0x7c00 | (i % 2) << 15);
            auto const value = static_cast<float>(binary16_value(bits));
            narrow_data.append(reinterpret_cast<char const*>(&bits), sizeof bits);
            wide_data.append(reinterpret_cast<char const*>(&value), sizeof value);
        }
        narrow_entries.push_back({entry.name, DType::f16, entry.shape, 0, 0});
        wide_entries.push_back({entry.name, DType::f32, entry.shape, 0, 0});
    }
    for (auto const& [folder, entries, data] : {std::tuple{f16, &narrow_entries, &narrow_data},
                                                std::tuple{f32, &wide_entries, &wide_data}}) {
        fs::create_directories(folder);
        fs::copy_file(from / "config.json", folder / "config.json");
        write_file(folder / "model.safetensors", safetensors_header_bytes(*entries) + *data);
    }
}

// F16 weights, as many published models are stored, are read as their values: a GPT-2 imported from F16 equals the
// same values imported from F32, element for element, through every tensor and the Conv1D transposes.
TEST(HuggingFace, F16WeightsReadAsTheirValues) {
    testing::TempDir dir;
    SerialState state(7);
    // Any gpt2-micro's folder: its config and tensor names (the values are replaced).
    CheckpointReader saved(state.save(dir / "ckpt", 0));
    export_hf(saved, dir / "hf");
    write_binary16_copies(dir / "hf", dir / "f16", dir / "f32");
    GptConfig const config = read_hf_gpt2_config(dir / "f16");
    std::vector<float> narrow(state.params.size()), wide(state.params.size());
    HfGpt2Weights(dir / "f16", config).read_local(state.layout, narrow);
    HfGpt2Weights(dir / "f32", config).read_local(state.layout, wide);
    for (std::size_t i = 0; i < wide.size(); ++i) ASSERT_EQ(narrow[i], wide[i]) << "element " << i;
}

// Every binary16 pattern widens to its value: subnormals, both zeros, the largest finite, infinities, NaNs.
TEST(HuggingFace, EveryF16PatternWidensExactly) {
    for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
        auto const pattern = static_cast<std::uint16_t>(bits);
        float const widened = float16_to_float(pattern);
        bool const infinite_or_nan = (pattern & 0x7c00) == 0x7c00;
        if (!infinite_or_nan) {
            ASSERT_EQ(widened, binary16_value(pattern)) << std::hex << bits;
            ASSERT_EQ(std::signbit(widened), (pattern & 0x8000) != 0) << std::hex << bits;
        } else if ((pattern & 0x3ff) == 0) {
            ASSERT_TRUE(std::isinf(widened) && std::signbit(widened) == ((pattern & 0x8000) != 0)) << std::hex << bits;
        } else {
            ASSERT_TRUE(std::isnan(widened)) << std::hex << bits;
        }
    }
}

// A dtype the format has but axonn does not read is named with its fix, and the file is not called damaged.
TEST(HuggingFace, AnUnreadDtypeIsNotCalledDamage) {
    testing::TempDir dir;
    std::string const header = R"({"wte.weight": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})";
    std::string const length(reinterpret_cast<char const*>(std::array<std::uint64_t, 1>{header.size()}.data()), 8);
    write_file(dir / "model.safetensors", length + header + "xx");
    InputFile const input = open_input_file(dir / "model.safetensors", "weights", "");
    std::string const error = testing::error_of([&] { read_safetensors_header(input, "weights"); });
    EXPECT_NE(error.find("has dtype F8_E4M3, which axonn does not read: convert the weights to F32, BF16 or F16"),
              std::string::npos) << error;
    EXPECT_EQ(error.find("damaged"), std::string::npos) << error;
}

// GPT-2's export writes F32 only: a request for BF16 is refused, not quietly written in F32.
TEST(HuggingFace, Gpt2ExportRefusesBf16) {
    testing::TempDir dir;
    SerialState state(7);
    CheckpointReader checkpoint(
        save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "ckpt"}));
    EXPECT_EQ(testing::error_of([&] { export_hf(checkpoint, dir / "hf", DType::bf16); }),
              "a GPT-2 checkpoint is exported in f32 only");
    EXPECT_FALSE(std::filesystem::exists(dir / "hf"));
}

// A checkpoint whose weights hold a NaN (with checksums that match: no damage the reader sees) was exported
// without a word, though `generate` refuses it: now the export names the weight, and writes nothing.
TEST(HuggingFace, WeightsThatAreNotFiniteAreNotExported) {
    testing::TempDir dir;
    SerialState state(7);
    state.params[state.layout.offset(3) + 2] = std::numeric_limits<float>::quiet_NaN();
    CheckpointReader checkpoint(
        save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "ckpt"}));
    std::string const error = testing::error_of([&] { export_hf(checkpoint, dir / "hf"); });
    EXPECT_NE(error.find("is damaged: its weight " + state.layout.param(3).name +
                         " holds a value that is not finite (NaN or infinite)"),
              std::string::npos)
        << error;
    EXPECT_FALSE(std::filesystem::exists(dir / "hf" / "model.safetensors"));

    // In the embedding's padding rows, which the export leaves out: still damage, and named as where it lies.
    state.params[state.layout.offset(3) + 2] = 0.0f;
    int embedding = 0;
    while (state.layout.param(embedding).name != "wte") ++embedding;
    int const padding_row = byte_micro().vocab_size + 10;
    state.params[state.layout.offset(embedding) + padding_row * byte_micro().n_embd] =
        std::numeric_limits<float>::infinity();
    CheckpointReader padded(
        save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "padded"}));
    std::string const padding = testing::error_of([&] { export_hf(padded, dir / "hf"); });
    EXPECT_NE(padding.find(fmt::format("its weight wte holds a value that is not finite (NaN or infinite) (row {}, "
                                       "one of the vocabulary's padding rows 257 to 319, which stay zero in training)",
                                       padding_row)),
              std::string::npos)
        << padding;
}

// A damaged or hostile model.safetensors.index.json: one line naming the index and the problem.
TEST(HuggingFace, HostileWeightIndexIsRefused) {
    testing::TempDir dir;
    SerialState state(7);
    CheckpointReader checkpoint(
        save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "ckpt"}));
    export_hf(checkpoint, dir / "hf");
    json const good = shard_hf_folder(dir / "hf", dir / "sharded");
    struct HostileIndex {
        char const* name;
        std::function<std::string()> index;
        char const* expected;
    };
    auto const with = [&good](char const* tensor, json file) {
        return [&good, tensor, file] {
            json index = good;
            index["weight_map"][tensor] = file;
            return index.dump();
        };
    };
    std::vector<HostileIndex> const cases = {
        {"not_json", [] { return std::string("{oops"); }, "is not a weight index"},
        {"no_weight_map", [] { return std::string(R"({"metadata": {}})"); }, "is not a weight index"},
        {"empty_weight_map", [] { return std::string(R"({"weight_map": {}})"); }, "is not a weight index"},
        {"outside_the_folder", with("wte.weight", "../model.safetensors"), "is not a .safetensors file of the folder"},
        {"absolute_path", with("wte.weight", "/etc/passwd"), "is not a .safetensors file of the folder"},
        {"not_a_name", with("wte.weight", 3), "not to a file name"},
        {"missing_shard", with("wte.weight", "model-00009-of-00009.safetensors"), "does not exist"},
        {"wrong_shard", with("wte.weight", good["weight_map"]["wpe.weight"]), "which does not hold it"},
        {"nested_too_deep", [] { return std::string(100000, '['); }, "is not a weight index (the JSON nests deeper"},
    };
    for (HostileIndex const& hostile : cases) {
        fs::path const folder = dir / hostile.name;
        fs::copy(dir / "sharded", folder);
        write_file(folder / "model.safetensors.index.json", hostile.index());
        std::string const error = error_of([&] { HfSafetensors{folder}; });
        EXPECT_NE(error.find(hostile.expected), std::string::npos) << hostile.name << ": " << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << hostile.name << ": " << error;
    }
    // Shards beside a model.safetensors: two models in one folder (transformers would load the whole file). An index
    // whose one shard is model.safetensors itself is one model.
    fs::copy(dir / "sharded", dir / "both");
    fs::copy_file(dir / "hf" / "model.safetensors", dir / "both" / "model.safetensors");
    std::string const both = error_of([&] { HfSafetensors{dir / "both"}; });
    EXPECT_NE(both.find("holds both model.safetensors and model.safetensors.index.json, whose shards "
                        "(model-00001-of-00002.safetensors, ...) are another copy of the weights"),
              std::string::npos)
        << both;
    json one_shard = good;
    for (auto& [tensor, file] : one_shard["weight_map"].items()) file = "model.safetensors";
    write_file(dir / "both" / "model.safetensors.index.json", one_shard.dump());
    EXPECT_NO_THROW(HfSafetensors{dir / "both"});
    // A tensor of a shard that the index leaves out was left unread without a word.
    fs::copy(dir / "sharded", dir / "unlisted");
    json unlisted = good;
    unlisted["weight_map"].erase("wpe.weight");
    write_file(dir / "unlisted" / "model.safetensors.index.json", unlisted.dump());
    std::string const error = error_of([&] { HfSafetensors{dir / "unlisted"}; });
    EXPECT_NE(error.find("holds wpe.weight, which " + (dir / "unlisted" / "model.safetensors.index.json").string() +
                         " does not list there"),
              std::string::npos)
        << error;
}

// A tensor GPT-2's config.json does not describe is refused by name (an import dropped it without a word); the
// causal-mask buffers that transformers saves in each layer are not weights, and are left alone.
TEST(HuggingFace, ATensorTheModelDoesNotHaveIsRefused) {
    testing::TempDir dir;
    SerialState state(7);
    CheckpointReader checkpoint(
        save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "ckpt"}));
    export_hf(checkpoint, dir / "hf");
    GptConfig const config = read_hf_gpt2_config(dir / "hf");
    for (auto const& [name, refused] : {std::pair{"h.0.attn.bias", false}, std::pair{"h.1.attn.masked_bias", false},
                                        std::pair{"h.0.attn.c_attn.extra", true}, std::pair{"score.weight", true}}) {
        fs::path const folder = dir / name;
        fs::create_directories(folder);
        fs::copy_file(dir / "hf" / "config.json", folder / "config.json");
        std::vector<testing::StoredTensor> tensors = testing::read_tensors(dir / "hf" / "model.safetensors");
        testing::StoredTensor extra = tensors.back();
        extra.entry.name = name;
        tensors.push_back(extra);
        testing::write_tensors(folder / "model.safetensors", tensors);
        if (!refused) {
            EXPECT_NO_THROW(HfGpt2Weights(folder, config)) << name;
            continue;
        }
        std::string const error = error_of([&] { HfGpt2Weights(folder, config); });
        EXPECT_NE(error.find(std::string(name) + " is no weight of a GPT-2 as its config.json describes it"),
                  std::string::npos)
            << error;
    }
}

struct HostileModel {
    char const* name;
    std::function<void(json&)> edit_config;
    char const* expected;
};

TEST(HuggingFace, ModelsAxonnCannotReproduceAreRefused) {
    testing::TempDir dir;
    SerialState state(7);
    CheckpointReader checkpoint(
        save_checkpoint(state.grid, byte_micro(), {state.params, {}, {}}, 0, nullptr, {dir / "ckpt"}));
    export_hf(checkpoint, dir / "good");
    std::vector<HostileModel> const cases = {
        {"llama", [](json& c) { c["model_type"] = "llama"; }, "describes model_type \"llama\""},
        {"bert", [](json& c) { c["model_type"] = "bert"; }, "axonn reads GPT-2 (gpt2) and Llama (llama) models"},
        {"llama_class", [](json& c) { c["architectures"] = {"LlamaForCausalLM"}; },
         "names the class \"LlamaForCausalLM\" in architectures, which is no GPT2 model though its model_type is "
         "\"gpt2\""},
        {"relu", [](json& c) { c["activation_function"] = "relu"; }, "activation_function = \"relu\""},
        {"wide_mlp", [](json& c) { c["n_inner"] = 100; }, "n_inner = 100"},
        {"untied", [](json& c) { c["tie_word_embeddings"] = false; }, "tie_word_embeddings"},
        {"epsilon", [](json& c) { c["layer_norm_epsilon"] = 1e-6; }, "layer_norm_epsilon"},
        {"no_width", [](json& c) { c.erase("n_embd"); }, "no positive integer n_embd"},
        {"heads", [](json& c) { c["n_head"] = 5; }, "heads do not divide"},
        {"more_layers", [](json& c) { c["n_layer"] = 3; }, "has no tensor h.2.ln_1.weight"},
        {"fewer_layers", [](json& c) { c["n_layer"] = 1; },  // the weights' last layer was dropped without a word
         "is a weight of layer 1, but config.json says the model has 1 layer: its config does not describe these "
         "weights"},
        {"longer_context", [](json& c) { c["n_positions"] = 128; }, "wpe.weight has shape [64, 64]"},
    };
    for (auto const& hostile : cases) {
        fs::path const folder = dir / hostile.name;
        fs::create_directories(folder);
        fs::copy_file(dir / "good" / "model.safetensors", folder / "model.safetensors");
        json config = json::parse(file_bytes(dir / "good" / "config.json"));
        hostile.edit_config(config);
        write_file(folder / "config.json", config.dump());
        std::string const error = error_of([&] { HfGpt2Weights(folder, read_hf_gpt2_config(folder)); });
        EXPECT_NE(error.find(hostile.expected), std::string::npos) << hostile.name << ": " << error;
    }
}

}  // namespace
}  // namespace axonn
