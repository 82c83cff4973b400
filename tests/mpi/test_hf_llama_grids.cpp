// A Hugging Face Llama folder, written by the PyTorch twin (tests/reference/llama_reference.py --write-hf: random
// weights under transformers' names, q/k/v and gate/up as separate tensors, in F32 and in BF16), imported onto
// every grid (each rank reading only its rows, replicas of key/value heads included: families/llama/hf_llama.h) under
// mpirun at np 1, 2, 4 and 8: each rank's slice of the logits equals the twin's float64 logits within 1e-5 relative
// (norm-wise; the fp32 forward's rounding, as the parity test's). The imported model is then saved from that grid
// as an axonn checkpoint and exported (families/llama/hf_llama.h, in the folder's own dtype): the export holds every one
// of the twin's tensors, of the same name, dtype and shape, byte for byte (import, save and export only copy, and
// bf16 → fp32 → bf16 is exact).
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/checkpoint/hf_export.h"
#include "axonn/core/file_io.h"
#include "axonn/families/llama/hf_llama.h"
#include "axonn/families/llama/hf_llama_config.h"
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/io/safetensors.h"
#include "axonn/io/tensor_file.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/model/decoder.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_hf_llama_grids {

// The suites' batch (support/micro_model.h); a function, since the world size is known only once MPI runs.
int batch() { return testing::suite_batch(); }
constexpr int seq = 9;

// Rank 0 writes the folder and the twin's logits; every rank learns where. Written once per dtype for the whole
// suite (HfLlamaOnGrid::SetUpTestSuite): the twin's run is mostly PyTorch's start-up, seconds that each of 80 cases
// at np 8 would otherwise repeat.
class HfLlamaFolder {
public:
    explicit HfLlamaFolder(bool bf16) : bf16_(bf16) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        std::string path;
        if (rank == 0) {
            dir_ = std::make_unique<testing::TempDir>(bf16 ? "hf_llama_bf16" : "hf_llama_f32");
            path = dir_->path().string();
            write(dir_->path());
        }
        int length = static_cast<int>(path.size());
        MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
        path.resize(static_cast<std::size_t>(length));
        MPI_Bcast(path.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
        path_ = path;
    }
    ~HfLlamaFolder() { MPI_Barrier(MPI_COMM_WORLD); }  // nobody reads once rank 0 removes it
    std::filesystem::path const& path() const { return path_; }
    std::vector<std::int32_t> const& tokens() const { return tokens_; }

private:
    void write(std::filesystem::path const& dir) {
        LlamaConfig const c = testing::micro_llama();
        nlohmann::json const config = {
            {"model_type", "llama"}, {"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size}, {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads}, {"num_key_value_heads", c.num_key_value_heads},
            {"max_position_embeddings", c.max_position_embeddings}, {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta}, {"tie_word_embeddings", false},
            {"rope_scaling", {{"rope_type", "llama3"}, {"factor", c.rope_scaling->factor},
                              {"low_freq_factor", c.rope_scaling->low_freq_factor},
                              {"high_freq_factor", c.rope_scaling->high_freq_factor},
                              {"original_max_position_embeddings", c.rope_scaling->original_max_position}}}};
        std::filesystem::create_directories(dir / "inputs");
        std::ofstream(dir / "inputs" / "config.json") << config.dump(2);
        Tensor tokens({batch(), seq}, DType::i32);
        for (int i = 0; i < batch() * seq; ++i) tokens.data<std::int32_t>()[i] = (i * 37 + 11) % c.vocab_size;
        NamedTensors inputs;
        inputs.emplace("tokens", std::move(tokens));
        write_tensor_file(dir / "inputs" / "batch.axt", inputs);
        std::string const command = std::string("/usr/bin/python3 ") + AXONN_SOURCE_DIR +
                                    "/tests/reference/llama_reference.py --write-hf " + (dir / "hf").string() +
                                    " --input " + (dir / "inputs").string() + " --output " +
                                    (dir / "logits.axt").string() + (bf16_ ? " --bf16" : "");
        EXPECT_EQ(std::system(command.c_str()), 0) << command;
    }

    bool bf16_;
    std::unique_ptr<testing::TempDir> dir_;
    std::filesystem::path path_;
    std::vector<std::int32_t> tokens_ = [] {
        std::vector<std::int32_t> tokens(batch() * seq);
        for (int i = 0; i < batch() * seq; ++i) tokens[i] = (i * 37 + 11) % testing::micro_llama().vocab_size;
        return tokens;
    }();
};

class HfLlamaOnGrid : public ::testing::TestWithParam<std::tuple<GridShape, bool>> {
public:
    // Every rank runs the same cases in the same order, so these collective set-ups and tear-downs line up.
    static void SetUpTestSuite() {
        for (bool const bf16 : {false, true}) folders_[bf16] = std::make_unique<HfLlamaFolder>(bf16);
    }
    static void TearDownTestSuite() {
        for (auto& folder : folders_) folder.reset();
    }

protected:
    static HfLlamaFolder const& folder(bool bf16) { return *folders_[bf16]; }

private:
    static inline std::unique_ptr<HfLlamaFolder> folders_[2];
};

// The twin's folder imported onto a grid: each rank's shards read from the files.
struct ImportedModel {
    LlamaConfig config;
    CpuBackend backend;
    ProcessGrid grid;
    Decoder model;

    ImportedModel(std::filesystem::path const& dir, GridShape const& shape)
        : config(read_hf_llama_config(dir)),
          grid(MPI_COMM_WORLD, shape, parse_axis_order("x,y,z,data")),
          model(decoder_architecture(config), backend, grid, batch() / shape.batch_replicas(), seq) {
        HfLlamaWeights(dir, config).read_local(model.layout(), model.params());
    }
};

TEST_P(HfLlamaOnGrid, ImportedLogitsMatchTheTwin) {
    auto const& [shape, bf16] = GetParam();
    HfLlamaFolder const& folder = HfLlamaOnGrid::folder(bf16);
    ImportedModel imported(folder.path() / "hf", shape);
    LlamaConfig const& config = imported.config;
    ProcessGrid& grid = imported.grid;
    Decoder& model = imported.model;
    Batch const rows = replica_rows(grid, batch(), seq, folder.tokens().data(), nullptr);
    model.forward(rows);

    NamedTensors const twin = read_tensor_file(folder.path() / "logits.axt");
    Tensor const& reference = twin.at("logits");  // [B,T,V] doubles
    VocabSlice const slice = model.vocab_slice();
    std::int64_t const first_row = (rows.tokens - folder.tokens().data()) / seq;
    double difference = 0, norm = 0;
    for (std::int64_t r = 0; r < static_cast<std::int64_t>(rows.B) * seq; ++r) {
        for (int v = 0; v < slice.valid; ++v) {
            std::int64_t const at = (first_row * seq + r) * config.vocab_size + slice.begin + v;
            double const expected = reference.data<double>()[at];
            double const actual = model.logits()[r * slice.rows + v];
            difference += (actual - expected) * (actual - expected);
            norm += expected * expected;
        }
    }
    EXPECT_LT(std::sqrt(difference / norm), 1e-5);
}

// Every tensor of a safetensors file: its dtype, shape and bytes.
struct StoredBytes {
    DType dtype;
    Shape shape;
    std::string bytes;
    bool operator==(StoredBytes const&) const = default;
};

std::map<std::string, StoredBytes> safetensors_contents(std::filesystem::path const& path) {
    InputFile const file = open_input_file(path, "safetensors file", "");
    SafetensorsHeader const header = read_safetensors_header(file, "safetensors file");
    std::map<std::string, StoredBytes> contents;
    for (SafetensorsEntry const& entry : header.tensors) {
        std::string bytes(entry.end - entry.begin, '\0');
        read_exactly(file, header.data_start + entry.begin, bytes.data(), bytes.size(), "safetensors file");
        contents[entry.name] = {entry.dtype, entry.shape, std::move(bytes)};
    }
    return contents;
}

TEST_P(HfLlamaOnGrid, ExportOfItsCheckpointHoldsTheTwinsTensorsBitForBit) {
    auto const& [shape, bf16] = GetParam();
    HfLlamaFolder const& folder = HfLlamaOnGrid::folder(bf16);
    ImportedModel imported(folder.path() / "hf", shape);
    LlamaConfig const& config = imported.config;
    // The folder is shared by every grid's case: each writes under its own name.
    std::string const case_name = testing::grid_test_name(shape);
    LocalTensors const weights{imported.model.param_values(), {}, {}, imported.model.architecture().vocab_split};
    std::filesystem::path const saved =
        save_checkpoint(imported.grid, config, weights, 0, nullptr, {folder.path() / "ckpt" / case_name, 0, 4096});
    if (imported.grid.rank() != 0) return;
    CheckpointReader checkpoint(saved);
    std::filesystem::path const exported_to = folder.path() / "export" / case_name;
    export_hf(checkpoint, exported_to, bf16 ? DType::bf16 : DType::f32);
    auto const original = safetensors_contents(folder.path() / "hf" / "model.safetensors");
    auto const exported = safetensors_contents(exported_to / "model.safetensors");
    EXPECT_EQ(exported.size(), original.size());
    for (auto const& [name, stored] : original) {
        auto const found = exported.find(name);
        ASSERT_NE(found, exported.end()) << name << " is not in the export";
        EXPECT_EQ(found->second.dtype, stored.dtype) << name;
        EXPECT_EQ(found->second.shape, stored.shape) << name;
        EXPECT_TRUE(found->second.bytes == stored.bytes) << name << " differs";
    }
    EXPECT_EQ(read_hf_llama_config(exported_to).parameter_count(), config.parameter_count());
}

INSTANTIATE_TEST_SUITE_P(
    EveryGrid, HfLlamaOnGrid,
    ::testing::Combine(::testing::ValuesIn(testing::suite_grids(testing::micro_llama(), batch())),
                       ::testing::Bool()),
    [](auto const& info) {
        return testing::grid_test_name(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_bf16" : "_f32");
    });

}  // namespace test_hf_llama_grids
}  // namespace axonn
