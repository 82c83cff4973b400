// Llama's shapes and parameter declarations: the presets count the parameters Meta publishes for Llama 3.1
// (8,030,261,248, 70,553,706,496 and 405,853,388,800, embedding and untied LM head included), the declarations
// hold exactly those elements besides the vocabulary's padding rows, impossible configs are refused by name, and
// the valid grids follow the declarations: Y must divide the 8 key/value heads of Llama 3.1 8B, so y = 16 is
// refused naming them while y = 8 fits.
#include "axonn/core/error.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/families/llama/llama_parameters.h"

#include "support/error_of.h"

#include <gtest/gtest.h>

namespace axonn {
namespace {

TEST(LlamaConfig, PresetsCountMetasParameters) {
    EXPECT_EQ(llama_preset("llama3.1-8b").parameter_count(), 8030261248);
    EXPECT_EQ(llama_preset("llama3.1-70b").parameter_count(), 70553706496);
    EXPECT_EQ(llama_preset("llama3.1-405b").parameter_count(), 405853388800);
    for (std::string const& name : llama_preset_names()) EXPECT_NO_THROW(llama_preset(name).validate()) << name;
    EXPECT_THROW(llama_preset("llama-9"), Error);
}

TEST(LlamaConfig, DeclarationsHoldEveryParameter) {
    for (char const* name : {"llama-tiny", "llama3.1-8b", "llama3.1-405b"}) {
        LlamaConfig const config = llama_preset(name);
        std::int64_t declared = 0;
        for (ParamDecl const& param : llama_parameters(config)) {
            std::int64_t const numel = shape_numel(param.shape);
            declared += param.real_rows >= 0 ? numel / param.rows * param.real_rows : numel;
        }
        EXPECT_EQ(declared, config.parameter_count()) << name;
    }
}

TEST(LlamaConfig, ImpossibleConfigsAreRefusedByName) {
    LlamaConfig config = llama_preset("llama-tiny");
    config.num_key_value_heads = 3;
    EXPECT_NE(testing::error_of([&] { config.validate(); }).find("num_key_value_heads 3 must divide"),
              std::string::npos);
    config = llama_preset("llama-tiny");
    config.num_attention_heads = 64;  // heads of one channel: rotary embeddings need pairs
    EXPECT_NE(testing::error_of([&] { config.validate(); }).find("heads of an even size"), std::string::npos);
    config = llama_preset("llama-tiny");
    config.rms_norm_eps = 0;
    EXPECT_NE(testing::error_of([&] { config.validate(); }).find("rms_norm_eps"), std::string::npos);
}

TEST(LlamaConfig, GridsFollowTheKeyValueHeads) {
    LlamaConfig config = llama_preset("llama3.1-8b");
    // 8 key/value heads split over y = 8, and are replicated on pairs of ranks over y = 16.
    EXPECT_FALSE(grid_problem(config, GridShape{.y = 8, .x = 2}, 16).has_value());
    EXPECT_FALSE(grid_problem(config, GridShape{.y = 16}, 16).has_value());
    // 12 ranks neither split nor replicate 8 heads.
    config.num_attention_heads = 24;
    config.hidden_size = 24 * 128;
    std::optional<std::string> const uneven = grid_problem(config, GridShape{.y = 12}, 12);
    ASSERT_TRUE(uneven.has_value());
    EXPECT_NE(uneven->find("y = 12 does not divide the 8 key/value heads of qkvw"), std::string::npos) << *uneven;
    // The tiny model (8 query heads, 2 key/value heads) splits on every grid of 8 ranks.
    EXPECT_EQ(valid_grids(llama_preset("llama-tiny"), 8, 8).size(), grid_factorisations(8).size());
}

// On Y rank 3 of 4, llama-tiny's qkvw holds query heads 6-7 and a replica of key/value head 1 (shared with rank 2).
TEST(LlamaConfig, KeyValueHeadsAreReplicatedOverALargerY) {
    LlamaConfig const config = llama_preset("llama-tiny");  // C 64, hs 8, NH 8, NKV 2
    ShardLayout const layout(llama_parameters(config), GridPosition{GridShape{.y = 4}, 0, 0, 3, 0});
    ASSERT_EQ(layout.block_rows(LlamaParam::qkvw), 16 + 8 + 8);
    std::vector<std::int64_t> rows;
    for (std::int64_t r = 0; r < 32; ++r) rows.push_back(layout.serial_index(LlamaParam::qkvw, r * 64) / 64);
    std::vector<std::int64_t> expected;
    for (std::int64_t r = 48; r < 64; ++r) expected.push_back(r);
    for (std::int64_t r = 72; r < 80; ++r) expected.push_back(r);
    for (std::int64_t r = 88; r < 96; ++r) expected.push_back(r);
    EXPECT_EQ(rows, expected);
    ShardLayout::ReplicatedRuns const replicated = layout.replicated_runs(LlamaParam::qkvw);
    EXPECT_EQ(replicated.factor, 2);
    ASSERT_EQ(replicated.runs.size(), 4u);  // per layer: its key rows, then its value rows
    EXPECT_EQ(replicated.runs[0], (std::pair<std::int64_t, std::int64_t>{16 * 64, 24 * 64}));
    EXPECT_EQ(replicated.runs[3], (std::pair<std::int64_t, std::int64_t>{32 * 64 + 24 * 64, 32 * 64 + 32 * 64}));
    EXPECT_EQ(replicated.capacity, 2 * 16 * 64);
}

// On Y rank 1 of 2, llama-tiny's qkvw holds its query heads 4-7 (serial rows 32-63), then key/value head 1 of
// the keys (rows 64 + 8-15) and of the values (rows 80 + 8-15); gateupw holds the second half of the gate rows and
// of the up rows.
TEST(LlamaConfig, RowPartsGiveEachYRankItsHeads) {
    LlamaConfig const config = llama_preset("llama-tiny");  // C 64, hs 8, NH 8, NKV 2, F 176
    ShardLayout const layout(llama_parameters(config), GridPosition{GridShape{.y = 2}, 0, 0, 1, 0});
    ASSERT_EQ(layout.block_rows(LlamaParam::qkvw), 48);
    std::vector<std::int64_t> rows;
    for (std::int64_t r = 0; r < 48; ++r) rows.push_back(layout.serial_index(LlamaParam::qkvw, r * 64) / 64);
    std::vector<std::int64_t> expected;
    for (std::int64_t r = 32; r < 64; ++r) expected.push_back(r);
    for (std::int64_t r = 72; r < 80; ++r) expected.push_back(r);
    for (std::int64_t r = 88; r < 96; ++r) expected.push_back(r);
    EXPECT_EQ(rows, expected);
    EXPECT_EQ(layout.serial_index(LlamaParam::gateupw, 0) / 64, 88);         // gate row 88 of 176
    EXPECT_EQ(layout.serial_index(LlamaParam::gateupw, 88 * 64) / 64, 264);  // up row 88: serial 176 + 88
}

}  // namespace
}  // namespace axonn
