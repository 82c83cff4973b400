#include "axonn/families/gpt2/gpt2_parameters.h"

#include <cmath>

namespace axonn {

std::vector<ParamDecl> gpt_parameters(GptConfig const& config) {
    std::int64_t const L = config.n_layer, C = config.n_embd, Vp = config.padded_vocab_size(), maxT = config.max_seq;
    std::int64_t const NH = config.n_head, hs = C / NH;
    constexpr float std = 0.02f;
    // GPT-2 scales the projections that write into the residual stream by 1/sqrt(2·L), one per residual add.
    float const residual_std = std / std::sqrt(2.0f * static_cast<float>(L));
    // qkv's rows are [q | k | v], each of NH heads: a Y rank holds its heads' rows of all three.
    std::vector<RowPart> const qkv_heads(3, RowPart{NH, hs, "attention heads"});
    std::vector<RowPart> const vocabulary = {{Vp, 1, "rows of the padded vocabulary"}};
    using enum ShardRole;
    using enum ParamInit;
    // name, serial shape, layers, rows, cols, role, row parts, init, init std, decay, real rows
    return {
        {"wte", {Vp, C}, 1, Vp, C, vocabulary_block, vocabulary, normal, std, true, config.vocab_size},
        {"wpe", {maxT, C}, 1, maxT, C, vector_over_x, {}, normal, std, true},
        {"ln1w", {L, C}, L, 1, C, vector_over_x, {}, ones},
        {"ln1b", {L, C}, L, 1, C, vector_over_x, {}, zeros},
        {"qkvw", {L, 3 * C, C}, L, 3 * C, C, normal_linear, qkv_heads, normal, std, true},
        {"qkvb", {L, 3 * C}, L, 3 * C, 1, vector_over_y, qkv_heads, zeros},
        {"attprojw", {L, C, C}, L, C, C, transposed_linear, {}, normal, residual_std, true},
        {"attprojb", {L, C}, L, 1, C, vector_over_x, {}, zeros},
        {"ln2w", {L, C}, L, 1, C, vector_over_x, {}, ones},
        {"ln2b", {L, C}, L, 1, C, vector_over_x, {}, zeros},
        {"fcw", {L, 4 * C, C}, L, 4 * C, C, normal_linear, {}, normal, std, true},
        {"fcb", {L, 4 * C}, L, 4 * C, 1, vector_over_y, {}, zeros},
        {"fcprojw", {L, C, 4 * C}, L, C, 4 * C, transposed_linear, {}, normal, residual_std, true},
        {"fcprojb", {L, C}, L, 1, C, vector_over_x, {}, zeros},
        {"lnfw", {C}, 1, 1, C, vector_over_x, {}, ones},
        {"lnfb", {C}, 1, 1, C, vector_over_x, {}, zeros},
    };
}

Architecture decoder_architecture(GptConfig const& config) {
    Architecture a;
    a.family = "gpt2";
    a.layers = config.n_layer;
    a.width = config.n_embd;
    a.heads = a.kv_heads = config.n_head;
    a.mlp_width = 4 * config.n_embd;
    a.vocab_size = config.vocab_size;
    a.padded_vocab = config.padded_vocab_size();
    a.context = config.max_seq;
    auto const at = [](Param id) { return static_cast<int>(id); };
    a.params = {.embed = at(Param::wte),
                .positions = at(Param::wpe),
                .head = at(Param::wte),
                .attn_norm = at(Param::ln1w),
                .attn_norm_bias = at(Param::ln1b),
                .qkv = at(Param::qkvw),
                .qkv_bias = at(Param::qkvb),
                .attn_out = at(Param::attprojw),
                .attn_out_bias = at(Param::attprojb),
                .mlp_norm = at(Param::ln2w),
                .mlp_norm_bias = at(Param::ln2b),
                .mlp_in = at(Param::fcw),
                .mlp_in_bias = at(Param::fcb),
                .mlp_out = at(Param::fcprojw),
                .mlp_out_bias = at(Param::fcprojb),
                .final_norm = at(Param::lnfw),
                .final_norm_bias = at(Param::lnfb)};
    a.declarations = gpt_parameters(config);
    return a;
}

ShardLayout gpt_layout(GptConfig const& config, GridPosition const& position) {
    return ShardLayout(gpt_parameters(config), position);
}

std::optional<std::string> grid_problem(GptConfig const& config, GridShape const& grid, int batch) {
    return grid_problem(gpt_parameters(config), grid, batch);
}

std::vector<GridShape> valid_grids(GptConfig const& config, int world, int batch) {
    return valid_grids(gpt_parameters(config), world, batch);
}

}  // namespace axonn
