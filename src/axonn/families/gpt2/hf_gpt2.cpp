#include "axonn/families/gpt2/hf_gpt2.h"

#include "axonn/core/bfloat16.h"
#include "axonn/core/error.h"
#include "axonn/core/guarded_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <set>
#include <cmath>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::uint64_t max_config_bytes = 1 << 20;

// Where each parameter lives in Hugging Face's GPT-2: its name (after "h.l." for a per-layer one), and whether
// the stored matrix is the transpose of axonn's (Conv1D).
struct HfTensor {
    Param id;
    char const* name;
    bool per_layer;
    bool transposed;
};
constexpr std::array<HfTensor, param_count> hf_tensors = {{
    {Param::wte, "wte.weight", false, false},
    {Param::wpe, "wpe.weight", false, false},
    {Param::ln1w, "ln_1.weight", true, false},
    {Param::ln1b, "ln_1.bias", true, false},
    {Param::qkvw, "attn.c_attn.weight", true, true},
    {Param::qkvb, "attn.c_attn.bias", true, false},
    {Param::attprojw, "attn.c_proj.weight", true, true},
    {Param::attprojb, "attn.c_proj.bias", true, false},
    {Param::ln2w, "ln_2.weight", true, false},
    {Param::ln2b, "ln_2.bias", true, false},
    {Param::fcw, "mlp.c_fc.weight", true, true},
    {Param::fcb, "mlp.c_fc.bias", true, false},
    {Param::fcprojw, "mlp.c_proj.weight", true, true},
    {Param::fcprojb, "mlp.c_proj.bias", true, false},
    {Param::lnfw, "ln_f.weight", false, false},
    {Param::lnfb, "ln_f.bias", false, false},
}};

std::string hf_name(HfTensor const& tensor, int layer) {
    return tensor.per_layer ? fmt::format("h.{}.{}", layer, tensor.name) : tensor.name;
}

// One layer's tensor in Hugging Face's shape: vectors as they are, matrices transposed where Conv1D stores them so.
Shape hf_shape(HfTensor const& tensor, GptConfig const& config) {
    Shape shape = gpt_parameters(config)[static_cast<int>(tensor.id)].shape;
    if (tensor.per_layer) shape.erase(shape.begin());
    if (tensor.id == Param::wte) shape[0] = config.vocab_size;
    if (tensor.transposed) std::swap(shape[0], shape[1]);
    return shape;
}

// out[c, r] = in[r, c] for an [rows, cols] matrix.
void transpose(float const* in, std::int64_t rows, std::int64_t cols, float* out) {
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
    }
}

// A config value that axonn's GPT-2 cannot change: absent (the default) or equal to what it must be.
template <typename T>
void require_setting(json const& config, char const* key, T const& required, fs::path const& path) {
    if (!config.contains(key) || config[key].is_null()) return;
    AXONN_REQUIRE(config[key] == required, "{} sets {} = {}, but axonn's GPT-2 supports only {}", path.string(), key,
                  config[key].dump(), json(required).dump());
}

int positive(json const& config, char const* key, fs::path const& path) {
    AXONN_REQUIRE(config.contains(key) && config[key].is_number_unsigned() && config[key].get<std::uint64_t>() > 0,
                  "{} has no positive integer {}: it is not a GPT-2 config", path.string(), key);
    AXONN_REQUIRE(config[key].get<std::uint64_t>() <= hf_config_largest_size,
                  "{} sets {} = {}: axonn supports at most {}", path.string(), key, config[key].dump(),
                  hf_config_largest_size);
    return config[key].get<int>();
}

}  // namespace

GptConfig read_hf_gpt2_config(fs::path const& dir) {
    fs::path const path = dir / hf_config_file;
    std::string const text = read_input_file(path, "Hugging Face config", "pass a Hugging Face model folder",
                                             max_config_bytes);
    json config;
    try {
        config = parse_guarded_json(text, 16);  // a config is 2 levels deep
    } catch (Error const& e) {
        fail("{}: {}: fix it, or fetch the model's config.json again", path.string(), e.what());
    }
    AXONN_REQUIRE(config.is_object(), "{} is not a JSON object: it is no Hugging Face config", path.string());
    AXONN_REQUIRE(config.contains("model_type") && config["model_type"] == "gpt2",
                  "{} describes model_type {}: axonn reads {} models", path.string(),
                  config.contains("model_type") ? config["model_type"].dump() : "(none)", hf_model_types());
    require_architectures_of(config, "GPT2", path.string());
    GptConfig model;
    model.name = dir.filename().string();
    model.vocab_size = positive(config, "vocab_size", path);
    model.n_layer = positive(config, "n_layer", path);
    model.n_head = positive(config, "n_head", path);
    model.n_embd = positive(config, "n_embd", path);
    model.max_seq = positive(config, "n_positions", path);
    // n_ctx, an older name of the context that transformers no longer reads: checked as a size all the same.
    if (config.contains("n_ctx") && !config["n_ctx"].is_null()) positive(config, "n_ctx", path);
    if (config.contains("activation_function") && config["activation_function"] == "gelu_pytorch_tanh") {
        // the same function as gelu_new, under transformers' other name for it
    } else {
        require_setting(config, "activation_function", std::string("gelu_new"), path);
    }
    require_setting(config, "n_inner", 4 * model.n_embd, path);
    require_setting(config, "tie_word_embeddings", true, path);
    require_setting(config, "scale_attn_weights", true, path);
    require_setting(config, "scale_attn_by_inverse_layer_idx", false, path);
    if (config.contains("layer_norm_epsilon")) {
        AXONN_REQUIRE(config["layer_norm_epsilon"].is_number() && config["layer_norm_epsilon"].get<double>() == 1e-5,
                      "{} sets layer_norm_epsilon = {}, but axonn's GPT-2 uses 1e-05", path.string(),
                      config["layer_norm_epsilon"].dump());
    }
    try {
        model.validate();
    } catch (Error const& e) {
        fail("{}: {}", path.string(), e.what());
    }
    return model;
}

HfGpt2Weights::HfGpt2Weights(fs::path const& dir, GptConfig const& config)
    : dir_(dir), config_(config), files_(dir) {
    prefix_ = files_.find("wte.weight") == nullptr && files_.find("transformer.wte.weight") != nullptr
                  ? "transformer."
                  : "";
    files_.require_no_layer_beyond(prefix_ + "h.", config.n_layer);
    std::set<std::string> weights_read;
    for (HfTensor const& tensor : hf_tensors) {
        for (int l = 0; l < (tensor.per_layer ? config.n_layer : 1); ++l) {
            std::string const name = prefix_ + hf_name(tensor, l);
            weights_read.insert(name);
            SafetensorsEntry const* entry = files_.find(name);
            AXONN_REQUIRE(entry != nullptr, "{} has no tensor {}: it is not a GPT-2 of this config's {} layers",
                          dir_.string(), name, config.n_layer);
            Shape const expected = hf_shape(tensor, config);
            AXONN_REQUIRE(entry->shape == expected, "{}: {} has shape {}, but its config.json asks for {}",
                          files_.where(name), name, shape_string(entry->shape), shape_string(expected));
            files_.require_weight_dtype(name);
        }
    }
    // An untied head would be silently replaced by the embedding: refuse one that differs from it.
    if (SafetensorsEntry const* head = files_.find("lm_head.weight")) {
        Shape const embedding = hf_shape(hf_tensors[0], config);
        AXONN_REQUIRE(head->shape == embedding, "{}: lm_head.weight has shape {}, not the embedding's",
                      files_.where("lm_head.weight"), shape_string(head->shape));
        files_.require_weight_dtype("lm_head.weight");
        Tensor const a = read("lm_head.weight", embedding), b = read(prefix_ + "wte.weight", embedding);
        AXONN_REQUIRE(std::equal(a.span<float>().begin(), a.span<float>().end(), b.span<float>().begin()),
                      "{}: lm_head.weight differs from the embedding; axonn's GPT-2 ties them", dir_.string());
        weights_read.insert("lm_head.weight");
    }
    // transformers' GPT-2 saves its attention's causal mask as buffers of each layer: not weights.
    auto const mask_buffer = [](std::string const& name) {
        return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    };
    files_.require_all_read(weights_read, mask_buffer, "a GPT-2");
}

Tensor HfGpt2Weights::read(std::string const& name, Shape const& shape) {
    Tensor values(shape, DType::f32);
    files_.read(name, 0, values.numel(), values.data<float>());
    return values;
}

void HfGpt2Weights::read_local(ShardLayout const& layout, std::span<float> params) {
    for (HfTensor const& tensor : hf_tensors) {
        ParamDecl const& param = layout.param(tensor.id);
        float* local = params.data() + layout.offset(tensor.id);
        std::int64_t const n = layout.local_numel(tensor.id);
        std::int64_t const per_layer = param.rows * param.cols;  // serial elements of one layer
        if (!tensor.transposed) {
            // A run of consecutive serial indices is one read, cut where a layer's tensor ends (each layer is a
            // tensor of its own in the files) and where the embedding's padding rows begin (they are not stored).
            std::int64_t const stored_end = param.real_rows >= 0 ? param.real_rows * param.cols : per_layer;
            for (std::int64_t i = 0; i < n;) {
                std::int64_t run = layout.serial_run(tensor.id, i);
                for (std::int64_t serial = layout.serial_index(tensor.id, i); run > 0;) {
                    std::int64_t const layer = serial / per_layer, within = serial % per_layer;
                    bool const stored = within < stored_end;
                    std::int64_t const take = std::min(run, (stored ? stored_end : per_layer) - within);
                    if (stored) {
                        files_.read(prefix_ + hf_name(tensor, static_cast<int>(layer)), within, take, local + i);
                    } else {
                        std::fill_n(local + i, take, 0.0f);
                    }
                    i += take;
                    serial += take;
                    run -= take;
                }
            }
            continue;
        }
        // Stored [in, out] = axonn's [out, in] transposed: per layer (each holds n / layers local elements), the
        // stored rows that are this rank's columns (one range), then each element picked from them.
        std::int64_t const per_layer_here = n / param.layers;
        std::vector<std::int64_t> within(static_cast<std::size_t>(per_layer_here));
        for (std::int64_t layer = 0; layer < param.layers; ++layer) {
            std::int64_t first_col = param.cols, last_col = -1;
            for (std::int64_t k = 0; k < per_layer_here; ++k) {
                within[k] = layout.serial_index(tensor.id, layer * per_layer_here + k) % per_layer;
                first_col = std::min(first_col, within[k] % param.cols);
                last_col = std::max(last_col, within[k] % param.cols);
            }
            std::vector<float> stored(static_cast<std::size_t>((last_col - first_col + 1) * param.rows));
            files_.read(prefix_ + hf_name(tensor, static_cast<int>(layer)), first_col * param.rows,
                        static_cast<std::int64_t>(stored.size()), stored.data());
            float* out = local + layer * per_layer_here;
            for (std::int64_t k = 0; k < per_layer_here; ++k) {
                std::int64_t const row = within[k] / param.cols, col = within[k] % param.cols;
                out[k] = stored[static_cast<std::size_t>((col - first_col) * param.rows + row)];
            }
        }
    }
}

void export_hf_gpt2(GptConfig const& config, ReadTensor const& read_tensor, fs::path const& out) {
    auto const specs = gpt_parameters(config);
    std::vector<SafetensorsEntry> entries;
    std::vector<Tensor> data;
    for (HfTensor const& tensor : hf_tensors) {
        Tensor const whole = read_tensor(specs[static_cast<int>(tensor.id)].name);
        Shape const stored = hf_shape(tensor, config);
        std::int64_t const per_layer = shape_numel(stored);
        for (int l = 0; l < (tensor.per_layer ? config.n_layer : 1); ++l) {
            Tensor layer(stored, DType::f32);
            float const* source = whole.data<float>() + l * per_layer;  // the embedding's first V rows
            if (tensor.transposed) {
                transpose(source, stored[1], stored[0], layer.data<float>());
            } else {
                std::copy_n(source, per_layer, layer.data<float>());
            }
            entries.push_back({hf_name(tensor, l), DType::f32, stored, 0, 0});
            data.push_back(std::move(layer));
        }
    }
    json hf_config = {{"architectures", {"GPT2LMHeadModel"}},
                      {"model_type", "gpt2"},
                      {"vocab_size", config.vocab_size},
                      {"n_positions", config.max_seq},
                      {"n_ctx", config.max_seq},
                      {"n_embd", config.n_embd},
                      {"n_layer", config.n_layer},
                      {"n_head", config.n_head},
                      {"n_inner", nullptr},
                      {"activation_function", "gelu_new"},
                      {"layer_norm_epsilon", 1e-5},
                      {"initializer_range", 0.02},
                      {"resid_pdrop", 0.0},
                      {"embd_pdrop", 0.0},
                      {"attn_pdrop", 0.0},
                      {"scale_attn_weights", true},
                      {"tie_word_embeddings", true},
                      {"use_cache", true},
                      {"torch_dtype", "float32"}};
    if (config.vocab_size == 50257) hf_config["bos_token_id"] = hf_config["eos_token_id"] = 50256;
    // transformers refuses a safetensors file whose metadata does not say which framework wrote it.
    write_hf_model_files(out, hf_config.dump(2) + "\n", safetensors_header_bytes(entries, {{"format", "pt"}}),
                         [&](AtomicFile& weights) {
                             for (Tensor const& tensor : data) weights.write(tensor.raw_data(), tensor.bytes());
                         });
}

}  // namespace axonn
