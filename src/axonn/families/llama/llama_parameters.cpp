#include "axonn/families/llama/llama_parameters.h"

namespace axonn {

std::vector<ParamDecl> llama_parameters(LlamaConfig const& config) {
    std::int64_t const L = config.num_hidden_layers, C = config.hidden_size, F = config.intermediate_size;
    std::int64_t const Vp = config.padded_vocab_size(), NH = config.num_attention_heads,
                       NKV = config.num_key_value_heads, hs = config.head_size();
    std::int64_t const qkv_rows = (NH + 2 * NKV) * hs;
    constexpr float std = 0.02f;  // Hugging Face's initializer_range for Llama, every matrix alike
    // Key/value heads split over Y like the query heads, or, where Y has more ranks than them, replicated.
    std::vector<RowPart> const qkv_heads = {
        {NH, hs, "query heads"}, {NKV, hs, "key/value heads", true}, {NKV, hs, "key/value heads", true}};
    std::vector<RowPart> const gate_and_up = {{F, 1, "rows of the MLP's gate"}, {F, 1, "rows of the MLP's up half"}};
    std::vector<RowPart> const vocabulary = {{Vp, 1, "rows of the padded vocabulary"}};
    using enum ShardRole;
    using enum ParamInit;
    // name, serial shape, layers, rows, cols, role, row parts, init, init std, decay, real rows
    return {
        {"embed", {Vp, C}, 1, Vp, C, vocabulary_block, vocabulary, normal, std, true, config.vocab_size},
        {"ln1w", {L, C}, L, 1, C, vector_over_x, {}, ones},
        {"qkvw", {L, qkv_rows, C}, L, qkv_rows, C, normal_linear, qkv_heads, normal, std, true},
        {"attprojw", {L, C, C}, L, C, C, transposed_linear, {}, normal, std, true},
        {"ln2w", {L, C}, L, 1, C, vector_over_x, {}, ones},
        {"gateupw", {L, 2 * F, C}, L, 2 * F, C, normal_linear, gate_and_up, normal, std, true},
        {"downw", {L, C, F}, L, C, F, transposed_linear, {}, normal, std, true},
        {"lnfw", {C}, 1, 1, C, vector_over_x, {}, ones},
        {"lm_head", {Vp, C}, 1, Vp, C, vocabulary_block, vocabulary, normal, std, true, config.vocab_size},
    };
}

Architecture decoder_architecture(LlamaConfig const& config) {
    config.validate();
    Architecture a;
    a.family = "llama";
    a.layers = config.num_hidden_layers;
    a.width = config.hidden_size;
    a.heads = config.num_attention_heads;
    a.kv_heads = config.num_key_value_heads;
    a.mlp_width = config.intermediate_size;
    a.vocab_size = config.vocab_size;
    a.padded_vocab = config.padded_vocab_size();
    a.context = config.max_position_embeddings;
    a.norm_eps = config.rms_norm_eps;
    a.layernorm = false;
    a.gelu = false;
    a.tied_head = false;
    a.rope_inv_freq = rope_inverse_frequencies(config.head_size(), config.rope_theta, config.rope_scaling);
    auto const at = [](LlamaParam id) { return static_cast<int>(id); };
    a.params = {.embed = at(LlamaParam::embed),
                .head = at(LlamaParam::lm_head),
                .attn_norm = at(LlamaParam::ln1w),
                .qkv = at(LlamaParam::qkvw),
                .attn_out = at(LlamaParam::attprojw),
                .mlp_norm = at(LlamaParam::ln2w),
                .mlp_in = at(LlamaParam::gateupw),
                .mlp_out = at(LlamaParam::downw),
                .final_norm = at(LlamaParam::lnfw)};
    a.declarations = llama_parameters(config);
    return a;
}

std::optional<std::string> grid_problem(LlamaConfig const& config, GridShape const& grid, int batch) {
    return grid_problem(llama_parameters(config), grid, batch);
}

std::vector<GridShape> valid_grids(LlamaConfig const& config, int world, int batch) {
    return valid_grids(llama_parameters(config), world, batch);
}

}  // namespace axonn
