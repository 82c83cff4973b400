#include "axonn/families/llama/hf_llama_config.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/guarded_json.h"
#include "axonn/core/json_fields.h"
#include "axonn/io/hf_safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

namespace axonn {
namespace {

using nlohmann::json;

// Fields that describe the run or the tokenizer, not the model's function: read past.
constexpr std::array<std::string_view, 5> ignored_fields = {
    "torch_dtype", "transformers_version", "use_cache", "initializer_range", "_name_or_path"};

// A special token's id: a whole number below the vocabulary's size.
int token_id(json const& value, char const* key, int vocab_size, std::string const& source) {
    AXONN_REQUIRE(value.is_number_unsigned() && value.get<std::uint64_t>() < static_cast<std::uint64_t>(vocab_size),
                  "{} sets {} = {}: a token id is a whole number below vocab_size {}", source, key, value.dump(),
                  vocab_size);
    return value.get<int>();
}

// bos_token_id and pad_token_id (one id each) and eos_token_id (one id, or a list of them), each absent or null
// for none.
void read_token_ids(json const& config, LlamaConfig& model, std::string const& source) {
    for (auto const& [key, id] : {std::pair{"bos_token_id", &LlamaConfig::bos_token_id},
                                  std::pair{"pad_token_id", &LlamaConfig::pad_token_id}}) {
        if (config.contains(key) && !config[key].is_null()) {
            model.*id = token_id(config[key], key, model.vocab_size, source);
        }
    }
    if (!config.contains("eos_token_id") || config["eos_token_id"].is_null()) return;
    json const& eos = config["eos_token_id"];
    model.eos_token_list = eos.is_array();
    AXONN_REQUIRE(!model.eos_token_list || !eos.empty(), "{} sets eos_token_id = []: give an id, or remove it",
                  source);
    for (json const& id : model.eos_token_list ? eos : json::array({eos})) {
        model.eos_token_ids.push_back(token_id(id, "eos_token_id", model.vocab_size, source));
    }
}

class ConfigReader {
public:
    ConfigReader(json const& config, std::string source) : config_(config), source_(std::move(source)) {}

    int positive(char const* key) const {
        AXONN_REQUIRE(config_.contains(key), "{} has no {}: a Llama config gives it", source_, key);
        return positive_value(key);
    }
    int positive_or(char const* key, int fallback) const {
        return config_.contains(key) && !config_[key].is_null() ? positive_value(key) : fallback;
    }
    double number(char const* key) const {
        AXONN_REQUIRE(config_.contains(key) && !config_[key].is_null(), "{} has no {}: give it", source_, key);
        return number_or(key, 0.0);
    }
    double number_or(char const* key, double fallback) const {
        if (!config_.contains(key) || config_[key].is_null()) return fallback;
        AXONN_REQUIRE(config_[key].is_number(), "{} sets {} = {}, which is not a number", source_, key,
                      config_[key].dump());
        return config_[key].get<double>();
    }
    // A field whose only value axonn reproduces is `required` (its absence means that value too).
    template <typename T> void require_value(char const* key, T const& required) const {
        if (!config_.contains(key) || config_[key].is_null()) return;
        AXONN_REQUIRE(config_[key] == json(required), "{} sets {} = {}, but axonn's Llama supports only {}", source_,
                      key, config_[key].dump(), json(required).dump());
    }

private:
    int positive_value(char const* key) const {
        json const& value = config_[key];
        AXONN_REQUIRE(value.is_number_unsigned() && value.get<std::uint64_t>() > 0,
                      "{} sets {} = {}: it must be a positive integer", source_, key, value.dump());
        AXONN_REQUIRE(value.get<std::uint64_t>() <= hf_config_largest_size,
                      "{} sets {} = {}: axonn supports at most {}", source_, key, value.dump(),
                      hf_config_largest_size);
        return value.get<int>();
    }

    json const& config_;
    std::string source_;
};

// rope_scaling: null (plain RoPE) or Llama 3's {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings} (older files say "type"), every field given, as transformers requires: a
// missing one would otherwise take a default here and change the positions' frequencies without a word.
std::optional<RopeScaling> read_rope_scaling(json const& config, std::string const& source) {
    if (!config.contains("rope_scaling") || config["rope_scaling"].is_null()) return std::nullopt;
    json const& scaling = config["rope_scaling"];
    std::string const where = source + " rope_scaling";
    AXONN_REQUIRE(scaling.is_object(), "{}: rope_scaling must be an object or null", source);
    std::string const kind = json_text_or(scaling, "rope_type", where, json_text_or(scaling, "type", where, "(none)"));
    AXONN_REQUIRE(kind == "llama3",
                  "{}: rope_scaling of type {} is not supported: axonn reproduces Llama 3's (\"llama3\")", source,
                  kind);
    AXONN_REQUIRE(json_text_or(scaling, "type", where, kind) == kind,
                  "{} says type {} and rope_type {}: keep one", where, scaling["type"].dump(), kind);
    static constexpr std::array<std::string_view, 6> fields = {
        "rope_type", "type", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
    for (auto const& [key, value] : scaling.items()) {
        AXONN_REQUIRE(std::find(fields.begin(), fields.end(), key) != fields.end(),
                      "{} has a field {} that axonn does not know: Llama 3's scaling has only {}", where, key,
                      "factor, low_freq_factor, high_freq_factor and original_max_position_embeddings");
    }
    ConfigReader const read(scaling, where);
    double const factor = read.number("factor"), low = read.number("low_freq_factor");
    double const high = read.number("high_freq_factor");
    // A context length, which Python may write as 8192.0.
    double const original = read.number("original_max_position_embeddings");
    AXONN_REQUIRE(original >= 1 && original <= static_cast<double>(hf_config_largest_size) &&
                      original == std::floor(original),
                  "{} sets original_max_position_embeddings = {}: it must be a whole number of positions, 1 to {}",
                  where, scaling["original_max_position_embeddings"].dump(), hf_config_largest_size);
    return RopeScaling{factor, low, high, original};
}

}  // namespace

LlamaConfig parse_hf_llama_config(std::string const& text, std::string const& source) {
    json config;
    try {
        config = parse_guarded_json(text, 16);  // a config is 3 levels deep
    } catch (Error const& e) {
        fail("{}: {}: fix it, or fetch the model's config.json again", source, e.what());
    }
    AXONN_REQUIRE(config.is_object(), "{} is not a JSON object: it is no Hugging Face config", source);
    AXONN_REQUIRE(config.contains("model_type") && config["model_type"] == "llama",
                  "{} describes model_type {}, not llama", source,
                  config.contains("model_type") ? config["model_type"].dump() : "(none)");
    require_architectures_of(config, "Llama", source);
    // The fields that define the model, each read or checked below.
    static constexpr std::array<std::string_view, 22> known = {
        "model_type", "architectures", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta",
        "rope_scaling", "head_dim", "hidden_act", "tie_word_embeddings", "attention_bias", "mlp_bias", "pretraining_tp",
        "attention_dropout", "bos_token_id", "eos_token_id", "pad_token_id"};
    for (auto const& [key, value] : config.items()) {
        bool const understood = std::find(known.begin(), known.end(), key) != known.end() ||
                                std::find(ignored_fields.begin(), ignored_fields.end(), key) != ignored_fields.end();
        AXONN_REQUIRE(understood,
                      "{} has a field {} that axonn does not know: it may change the model; remove it if it "
                      "does not",
                      source, key);
    }
    ConfigReader const fields(config, source);
    LlamaConfig model;
    model.name = "custom";
    model.vocab_size = fields.positive("vocab_size");
    model.hidden_size = fields.positive("hidden_size");
    model.intermediate_size = fields.positive("intermediate_size");
    model.num_hidden_layers = fields.positive("num_hidden_layers");
    model.num_attention_heads = fields.positive("num_attention_heads");
    // transformers' defaults where a field is absent.
    model.num_key_value_heads = fields.positive_or("num_key_value_heads", model.num_attention_heads);
    model.max_position_embeddings = fields.positive_or("max_position_embeddings", 2048);
    model.rms_norm_eps = fields.number_or("rms_norm_eps", 1e-6);
    model.rope_theta = fields.number_or("rope_theta", 10000.0);
    model.rope_scaling = read_rope_scaling(config, source);
    if (config.contains("head_dim") && !config["head_dim"].is_null()) {
        AXONN_REQUIRE(config["head_dim"] == json(model.hidden_size / model.num_attention_heads),
                      "{} sets head_dim = {}, but axonn's Llama needs hidden_size / num_attention_heads = {}", source,
                      config["head_dim"].dump(), model.hidden_size / model.num_attention_heads);
    }
    read_token_ids(config, model, source);
    fields.require_value("hidden_act", std::string("silu"));
    fields.require_value("tie_word_embeddings", false);
    fields.require_value("attention_bias", false);
    fields.require_value("mlp_bias", false);
    fields.require_value("pretraining_tp", 1);
    if (config.contains("attention_dropout") && !config["attention_dropout"].is_null()) {
        AXONN_REQUIRE(config["attention_dropout"].is_number() && config["attention_dropout"].get<double>() == 0.0,
                      "{} sets attention_dropout = {}, but axonn's Llama has no dropout", source,
                      config["attention_dropout"].dump());
    }
    try {
        model.validate();
    } catch (Error const& e) {
        fail("{}: {}", source, e.what());
    }
    return model;
}

LlamaConfig read_hf_llama_config(std::filesystem::path const& dir) {
    std::filesystem::path const path = dir / hf_config_file;
    LlamaConfig config = parse_hf_llama_config(
        read_input_file(path, "Hugging Face config", "pass a Hugging Face model folder", std::uint64_t{1} << 20),
        path.string());
    config.name = dir.filename().string();
    return config;
}

json hf_llama_config_json(LlamaConfig const& config, std::string const& torch_dtype) {
    json rope_scaling = nullptr;
    if (config.rope_scaling) {
        RopeScaling const& s = *config.rope_scaling;
        json const original = s.original_max_position == std::floor(s.original_max_position)
                                  ? json(static_cast<std::int64_t>(s.original_max_position))
                                  : json(s.original_max_position);
        rope_scaling = {{"rope_type", "llama3"},
                        {"factor", s.factor},
                        {"low_freq_factor", s.low_freq_factor},
                        {"high_freq_factor", s.high_freq_factor},
                        {"original_max_position_embeddings", original}};
    }
    json hf_config = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"vocab_size", config.vocab_size},
                      {"hidden_size", config.hidden_size},
                      {"intermediate_size", config.intermediate_size},
                      {"num_hidden_layers", config.num_hidden_layers},
                      {"num_attention_heads", config.num_attention_heads},
                      {"num_key_value_heads", config.num_key_value_heads},
                      {"head_dim", config.head_size()},
                      {"max_position_embeddings", config.max_position_embeddings},
                      {"rms_norm_eps", config.rms_norm_eps},
                      {"rope_theta", config.rope_theta},
                      {"rope_scaling", rope_scaling},
                      {"hidden_act", "silu"},
                      {"tie_word_embeddings", false},
                      {"attention_bias", false},
                      {"mlp_bias", false},
                      {"attention_dropout", 0.0},
                      {"pretraining_tp", 1},
                      {"initializer_range", 0.02},
                      {"use_cache", true},
                      {"torch_dtype", torch_dtype}};
    if (config.bos_token_id) hf_config["bos_token_id"] = *config.bos_token_id;
    if (config.pad_token_id) hf_config["pad_token_id"] = *config.pad_token_id;
    if (config.eos_token_list) {
        hf_config["eos_token_id"] = config.eos_token_ids;
    } else if (!config.eos_token_ids.empty()) {
        hf_config["eos_token_id"] = config.eos_token_ids.front();
    }
    return hf_config;
}

}  // namespace axonn
