// The vocabulary's two layouts as the shard layout sees them (parallel/param_decl.h, VocabSplit), on llama-tiny
// (vocabulary 256, width 64):
//   - over the X·Y plane, rank (y, x) holds rows [s·Vp/(G_x·G_y), (s+1)·Vp/(G_x·G_y)) of slice s = y·G_x + x,
//     every column, and with Z split the flattened block in G_z consecutive pieces;
//   - over every grid of 8 ranks, in both layouts, the ranks of one data replica hold every element of the
//     embedding exactly once (its owners), and the layouts differ only where x > 1;
//   - a grid whose x·y does not divide the padded vocabulary is refused naming both axes;
//   - the automatic layout is the one that moves fewer bytes over X (a table of models and grids), unless only
//     Y's fits the grid;
// and the column-block kernels that move a token's hidden state between X's slices and its whole row:
// split_columns lays a matrix's column blocks out one after another, join_columns undoes it, both exactly.
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/kernels/cpu/column_blocks.h"
#include "axonn/model/decoder.h"
#include "axonn/model/model_config.h"
#include "axonn/parallel/vocab_parallel.h"
#include "support/error_of.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

namespace axonn {
namespace {

std::vector<ParamDecl> tiny(VocabSplit split) {
    return with_vocab_split(llama_parameters(llama_preset("llama-tiny")), split);
}

TEST(VocabLayout, OverThePlaneEachRankHoldsWholeRowsOfItsSlice) {
    // y = 2, x = 2, z = 2: rank (y 1, x 0, z 1) holds slice 2, rows 128-191, second half of its flattened block.
    ShardLayout const layout(tiny(VocabSplit::xy), GridPosition{GridShape{.z = 2, .y = 2, .x = 2}, 0, 1, 1, 0});
    EXPECT_EQ(layout.block_rows(LlamaParam::embed), 64);
    EXPECT_EQ(layout.block_cols(LlamaParam::embed), 64);
    ASSERT_EQ(layout.local_numel(LlamaParam::embed), 64 * 64 / 2);
    EXPECT_EQ(layout.serial_index(LlamaParam::embed, 0), (128 + 32) * 64);
    EXPECT_EQ(layout.serial_index(LlamaParam::embed, 65), (128 + 33) * 64 + 1);
    // Whole rows: the local elements run on in the serial tensor across row ends.
    EXPECT_EQ(layout.serial_run(LlamaParam::embed, 0), 32 * 64);
    // The same rank in AxoNN's layout: rows 128-255 over Y, columns 0-31 over X.
    ShardLayout const axonn(tiny(VocabSplit::y), GridPosition{GridShape{.z = 2, .y = 2, .x = 2}, 0, 1, 1, 0});
    EXPECT_EQ(axonn.block_rows(LlamaParam::embed), 128);
    EXPECT_EQ(axonn.block_cols(LlamaParam::embed), 32);
    EXPECT_EQ(axonn.serial_index(LlamaParam::embed, 0), (128 + 64) * 64);
}

TEST(VocabLayout, EveryGridHoldsEachElementOnceInBothLayouts) {
    for (GridShape const& shape : grid_factorisations(8)) {
        std::map<VocabSplit, std::vector<std::int64_t>> held;
        for (VocabSplit const split : {VocabSplit::xy, VocabSplit::y}) {
            std::vector<int> count(256 * 64, 0);
            for (int z = 0; z < shape.z; ++z) {
                for (int y = 0; y < shape.y; ++y) {
                    for (int x = 0; x < shape.x; ++x) {
                        ShardLayout const layout(tiny(split), GridPosition{shape, 0, z, y, x});
                        if (!layout.owns(LlamaParam::embed)) continue;
                        for (std::int64_t i = 0; i < layout.local_numel(LlamaParam::embed); ++i) {
                            ++count[layout.serial_index(LlamaParam::embed, i)];
                        }
                        if (z == shape.z - 1 && y == shape.y - 1 && x == shape.x - 1) {
                            held[split].push_back(layout.serial_index(LlamaParam::embed, 0));
                        }
                    }
                }
            }
            EXPECT_EQ(std::count(count.begin(), count.end(), 1), 256 * 64) << shape << " " << vocab_split_name(split);
        }
        // The last rank's first element: the same place in both layouts exactly when x = 1.
        EXPECT_EQ(held[VocabSplit::xy] == held[VocabSplit::y], shape.x == 1) << shape;
    }
}

TEST(VocabLayout, APlaneThatDoesNotDivideTheVocabularyIsRefused) {
    // The embedding is the first tensor checked: its 256 rows cannot go in 6 slices (x = 3 would not divide
    // the width either, but that is checked later).
    auto const problem = grid_problem(tiny(VocabSplit::xy), GridShape{.y = 2, .x = 3}, 1);
    ASSERT_TRUE(problem.has_value());
    EXPECT_NE(problem->find("y·x = 6 does not divide"), std::string::npos) << *problem;
}

// --vocab-split auto: the layout that moves fewer bytes over X. Over the X·Y plane X moves 4 · C fp32 numbers a
// token (16 C bytes); over Y the logits' all-reduce moves 2 · Vp/G_y numbers of the GEMMs' type.
TEST(VocabLayout, TheAutomaticSplitMovesFewerBytesOverX) {
    struct Case {
        int width, padded_vocab;
        GridShape grid;
        int gemm_bytes;
        VocabSplit expected;
    };
    for (Case const& c : std::vector<Case>{
             {256, 50304, {.y = 2, .x = 2}, 4, VocabSplit::xy},      // the demo: 4,096 bytes against 100,608
             {4096, 128256, {.y = 8, .x = 2}, 2, VocabSplit::y},     // Llama 3.1 8B in bf16: 65,536 against 64,128
             {4096, 128256, {.y = 4, .x = 2}, 2, VocabSplit::xy},    // 65,536 against 128,256
             {64, 320, {.y = 4, .x = 2}, 4, VocabSplit::y},          // 1,024 against 640
             {64, 320, {.y = 8, .x = 1}, 4, VocabSplit::xy},         // X not split: the two are one
         }) {
        EXPECT_EQ(resolved_vocab_split(VocabSplit::automatic, c.width, c.padded_vocab, c.grid, c.gemm_bytes),
                  c.expected)
            << c.grid << " width " << c.width;
        EXPECT_EQ(resolved_vocab_split(VocabSplit::y, c.width, c.padded_vocab, c.grid, c.gemm_bytes), VocabSplit::y);
    }
}

// gpt2-micro of width 48 and 300 words, padded to 320 rows.
Architecture width_48_vocabulary_300() {
    GptConfig gpt = gpt_preset("gpt2-micro");
    gpt.vocab_size = 300;
    gpt.n_head = 6;
    gpt.n_embd = 48;
    return ModelConfig(gpt).validated_architecture();
}

// Width 48 and 300 words padded to 320: x = 3 divides the width but not the 320 rows, so X·Y's layout (which
// moves fewer bytes here) cannot split them; the automatic split runs the grid with Y's instead of refusing it.
TEST(VocabLayout, TheAutomaticSplitTakesYsLayoutWhereOnlyItFitsTheGrid) {
    Architecture const model = width_48_vocabulary_300();
    ASSERT_EQ(model.padded_vocab, 320);
    GridShape const x3{.x = 3};
    ASSERT_EQ(resolved_vocab_split(VocabSplit::automatic, 48, 320, x3, 4), VocabSplit::xy);
    Architecture const automatic = model.with_vocab_split(VocabSplit::automatic, x3, DType::f32);
    EXPECT_EQ(automatic.vocab_split, VocabSplit::y);
    EXPECT_FALSE(grid_problem(automatic.declarations, x3, 1).has_value());
    // Asked for by name, X·Y's layout stays, and the grid is refused naming why.
    Architecture const named = model.with_vocab_split(VocabSplit::xy, x3, DType::f32);
    EXPECT_EQ(named.vocab_split, VocabSplit::xy);
    auto const problem = grid_problem(named.declarations, x3, 1);
    ASSERT_TRUE(problem.has_value());
    EXPECT_NE(problem->find("y·x = 3 does not divide"), std::string::npos) << *problem;
    // Where X·Y's layout fits (x = 2), the automatic split keeps it.
    EXPECT_EQ(model.with_vocab_split(VocabSplit::automatic, GridShape{.x = 2}, DType::f32).vocab_split,
              VocabSplit::xy);
}

// The grids a refusal lists are each laid out as the run would lay it out: with the automatic split, y = 3 (whose
// rows neither layout divides) names x = 3, which Y's layout runs, although X·Y's, taken for y = 3, does not.
TEST(VocabLayout, ARefusedGridListsTheGridsTheAutomaticSplitRuns) {
    Architecture const model = width_48_vocabulary_300();
    std::string const error = testing::error_of([&] { require_grid_fits(model, DecoderOptions{}, {.y = 3}, 3, 6); });
    EXPECT_NE(error.find("valid grids for 3 ranks, this model and batch 6: data=1,z=1,y=1,x=3 | "
                         "data=1,z=3,y=1,x=1 | data=3,z=1,y=1,x=1"),
              std::string::npos)
        << error;
}

TEST(ColumnBlocks, SplitLaysBlocksOutInTurnAndJoinUndoesIt) {
    // in[2, 6] = 0 … 11 in blocks of 2 columns: block p holds columns 2p, 2p+1 of both rows.
    std::vector<float> in(12);
    std::iota(in.begin(), in.end(), 0.0f);
    std::vector<float> blocks(12), joined(12);
    cpu::split_columns(blocks.data(), in.data(), 2, 3, 2);
    EXPECT_EQ(blocks, (std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
    cpu::join_columns(joined.data(), blocks.data(), 2, 3, 2);
    EXPECT_EQ(joined, in);
}

}  // namespace
}  // namespace axonn
