#include "axonn/families/llama/hf_llama.h"

#include "axonn/core/bfloat16.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/families/llama/hf_llama_config.h"
#include "axonn/families/llama/llama_parameters.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// Where one serial row of an axonn tensor is stored: a Hugging Face tensor and its row.
struct StoredRow {
    std::string name;
    std::int64_t row;  // -1: a padding row of the vocabulary, not stored (zero)
};

// The Hugging Face tensors an axonn tensor's rows come from, per layer: each covers `rows` consecutive rows.
struct StoredPart {
    std::string suffix;
    std::int64_t rows;
    Shape shape;
};

std::vector<StoredPart> stored_parts(LlamaParam id, LlamaConfig const& c) {
    std::int64_t const C = c.hidden_size, F = c.intermediate_size, hs = c.head_size();
    std::int64_t const q = c.num_attention_heads * hs, kv = c.num_key_value_heads * hs, V = c.vocab_size;
    switch (id) {
        case LlamaParam::embed: return {{"model.embed_tokens.weight", V, {V, C}}};
        case LlamaParam::ln1w: return {{"input_layernorm.weight", 1, {C}}};
        case LlamaParam::qkvw:
            return {{"self_attn.q_proj.weight", q, {q, C}}, {"self_attn.k_proj.weight", kv, {kv, C}},
                    {"self_attn.v_proj.weight", kv, {kv, C}}};
        case LlamaParam::attprojw: return {{"self_attn.o_proj.weight", C, {C, C}}};
        case LlamaParam::ln2w: return {{"post_attention_layernorm.weight", 1, {C}}};
        case LlamaParam::gateupw: return {{"mlp.gate_proj.weight", F, {F, C}}, {"mlp.up_proj.weight", F, {F, C}}};
        case LlamaParam::downw: return {{"mlp.down_proj.weight", C, {C, F}}};
        case LlamaParam::lnfw: return {{"model.norm.weight", 1, {C}}};
        case LlamaParam::lm_head: return {{"lm_head.weight", V, {V, C}}};
    }
    return {};
}

bool per_layer(LlamaParam id) {
    return id != LlamaParam::embed && id != LlamaParam::lnfw && id != LlamaParam::lm_head;
}

std::string stored_name(LlamaParam id, StoredPart const& part, std::int64_t layer) {
    return per_layer(id) ? fmt::format("model.layers.{}.{}", layer, part.suffix) : part.suffix;
}

StoredRow stored_row(LlamaParam id, LlamaConfig const& config, std::int64_t layer, std::int64_t row) {
    for (StoredPart const& part : stored_parts(id, config)) {
        if (row < part.rows) return {stored_name(id, part, layer), row};
        row -= part.rows;
    }
    return {std::string(), -1};  // beyond the stored rows: the vocabulary's padding
}

}  // namespace

HfLlamaWeights::HfLlamaWeights(fs::path const& dir, LlamaConfig const& config)
    : dir_(dir), config_(config), files_(dir) {
    files_.require_no_layer_beyond("model.layers.", config.num_hidden_layers);
    std::set<std::string> read;
    for (int id = 0; id < llama_param_count; ++id) {
        auto const param = static_cast<LlamaParam>(id);
        for (std::int64_t l = 0; l < (per_layer(param) ? config.num_hidden_layers : 1); ++l) {
            for (StoredPart const& part : stored_parts(param, config)) {
                std::string const name = stored_name(param, part, l);
                read.insert(name);
                SafetensorsEntry const* entry = files_.find(name);
                AXONN_REQUIRE(entry != nullptr, "{} has no tensor {}: {}", dir_.string(), name,
                              param == LlamaParam::lm_head
                                  ? "its LM head, which a Llama axonn reads has apart from the embedding "
                                    "(tie_word_embeddings false, as its config.json says)"
                                  : fmt::format("it is not a Llama of this config's {} layers",
                                                config.num_hidden_layers));
                AXONN_REQUIRE(entry->shape == part.shape, "{}: {} has shape {}, but its config.json asks for {}",
                              files_.where(name), name, shape_string(entry->shape), shape_string(part.shape));
                files_.require_weight_dtype(name);
            }
        }
    }
    // transformers has saved the rotary frequencies, which rope_theta gives, in each attention or once in the model
    // (model.rotary_emb.inv_freq): not weights.
    files_.require_all_read(
        read, [](std::string const& name) { return name.ends_with("rotary_emb.inv_freq"); }, "a Llama");
}

void HfLlamaWeights::read_local(ShardLayout const& layout, std::span<float> params) {
    for (int id = 0; id < layout.count(); ++id) {
        auto const param = static_cast<LlamaParam>(id);
        ParamDecl const& decl = layout.param(id);
        float* local = params.data() + layout.offset(id);
        std::int64_t const n = layout.local_numel(id), per_layer_numel = decl.rows * decl.cols;
        // A run of consecutive serial indices, cut at each row's end: one read from the row it is stored in.
        for (std::int64_t i = 0; i < n;) {
            std::int64_t run = layout.serial_run(id, i);
            for (std::int64_t serial = layout.serial_index(id, i); run > 0;) {
                std::int64_t const layer = serial / per_layer_numel, within = serial % per_layer_numel;
                std::int64_t const row = within / decl.cols, col = within % decl.cols;
                std::int64_t const take = std::min(run, decl.cols - col);
                StoredRow const stored = stored_row(param, config_, layer, row);
                if (stored.row < 0) {
                    std::fill_n(local + i, take, 0.0f);
                } else {
                    files_.read(stored.name, stored.row * decl.cols + col, take, local + i);
                }
                i += take;
                serial += take;
                run -= take;
            }
        }
    }
}

namespace {

// Every stored tensor's data, in the order of the header's entries: by axonn tensor, layer, then part.
void write_tensors(AtomicFile& weights, LlamaConfig const& config, ReadTensor const& read_tensor, DType dtype) {
    std::vector<ParamDecl> const decls = llama_parameters(config);
    std::vector<bfloat16> rounded;
    for (int id = 0; id < llama_param_count; ++id) {
        auto const param = static_cast<LlamaParam>(id);
        Tensor const whole = read_tensor(decls[id].name);  // [layers, rows, cols], padding rows included
        std::int64_t const per_layer_numel = decls[id].rows * decls[id].cols;
        for (std::int64_t l = 0; l < (per_layer(param) ? config.num_hidden_layers : 1); ++l) {
            float const* from = whole.data<float>() + l * per_layer_numel;
            for (StoredPart const& part : stored_parts(param, config)) {
                std::int64_t const n = shape_numel(part.shape);
                if (dtype == DType::f32) {
                    weights.write(from, static_cast<std::size_t>(n) * sizeof(float));
                } else {
                    rounded.resize(static_cast<std::size_t>(n));
                    std::transform(from, from + n, rounded.begin(), to_bfloat16);
                    weights.write(rounded.data(), rounded.size() * sizeof(bfloat16));
                }
                from += n;
            }
        }
    }
}

}  // namespace

void export_hf_llama(LlamaConfig const& config, ReadTensor const& read_tensor, fs::path const& out, DType dtype) {
    AXONN_REQUIRE(dtype == DType::f32 || dtype == DType::bf16, "export writes F32 or BF16 weights, not {}",
                  safetensors_dtype_name(dtype));
    // Every stored tensor in the order write_tensors writes its data.
    std::vector<SafetensorsEntry> entries;
    for (int id = 0; id < llama_param_count; ++id) {
        auto const param = static_cast<LlamaParam>(id);
        for (std::int64_t l = 0; l < (per_layer(param) ? config.num_hidden_layers : 1); ++l) {
            for (StoredPart const& part : stored_parts(param, config)) {
                entries.push_back({stored_name(param, part, l), dtype, part.shape, 0, 0});
            }
        }
    }
    // transformers refuses a safetensors file whose metadata does not say which framework wrote it.
    write_hf_model_files(out, hf_llama_config_json(config, dtype == DType::f32 ? "float32" : "bfloat16").dump(2) + "\n",
                         safetensors_header_bytes(entries, {{"format", "pt"}}),
                         [&](AtomicFile& weights) { write_tensors(weights, config, read_tensor, dtype); });
}

}  // namespace axonn
