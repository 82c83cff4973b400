// Hugging Face's Llama config.json: Llama 3.1 8B's published file reads as the llama3.1-8b preset, field for field;
// every config axonn cannot reproduce, or does not know, is refused with one line naming the field.
#include "axonn/families/llama/hf_llama_config.h"

#include "support/error_of.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace axonn {
namespace {

// Llama 3.1 8B's config.json as Meta publishes it on the Hugging Face Hub.
nlohmann::json llama31_8b() {
    return nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
      "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": false,
      "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
      "pretraining_tp": 1, "rms_norm_eps": 1e-05,
      "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
      "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

TEST(HfLlamaConfig, Llama31EightBReadsAsThePreset) {
    LlamaConfig const read = parse_hf_llama_config(llama31_8b().dump(), "config.json");
    LlamaConfig const preset = llama_preset("llama3.1-8b");
    EXPECT_EQ(read.vocab_size, preset.vocab_size);
    EXPECT_EQ(read.hidden_size, preset.hidden_size);
    EXPECT_EQ(read.intermediate_size, preset.intermediate_size);
    EXPECT_EQ(read.num_hidden_layers, preset.num_hidden_layers);
    EXPECT_EQ(read.num_attention_heads, preset.num_attention_heads);
    EXPECT_EQ(read.num_key_value_heads, preset.num_key_value_heads);
    EXPECT_EQ(read.max_position_embeddings, preset.max_position_embeddings);
    EXPECT_EQ(read.rms_norm_eps, preset.rms_norm_eps);
    EXPECT_EQ(read.rope_theta, preset.rope_theta);
    EXPECT_EQ(read.rope_scaling, preset.rope_scaling);
    EXPECT_EQ(read.parameter_count(), 8030261248);
}

struct BadConfig {
    std::string name;
    std::string key;        // set to `value`, or removed when value is null
    nlohmann::json value;
    std::string expected;   // in the one-line error
};

class HfLlamaConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(HfLlamaConfigErrors, RefusedByName) {
    BadConfig const& bad = GetParam();
    nlohmann::json config = llama31_8b();
    if (bad.value.is_null()) {
        config.erase(bad.key);
    } else {
        config[bad.key] = bad.value;
    }
    std::string const message = testing::error_of([&] { parse_hf_llama_config(config.dump(), "config.json"); });
    EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, HfLlamaConfigErrors,
    ::testing::Values(
        BadConfig{"unknown_field", "sliding_window", 4096, "has a field sliding_window that axonn does not know"},
        BadConfig{"another_model", "model_type", "mistral", "describes model_type \"mistral\", not llama"},
        BadConfig{"model_type_not_text", "model_type", 3, "describes model_type 3, not llama"},
        // Read as a Llama without a word, though transformers builds the class architectures names.
        BadConfig{"another_family_s_class", "architectures", {"GPT2LMHeadModel"},
                  "config.json names the class \"GPT2LMHeadModel\" in architectures, which is no Llama model though "
                  "its model_type is \"llama\": one of the two is wrong"},
        BadConfig{"architectures_not_a_list", "architectures", "LlamaForCausalLM",
                  "sets architectures = \"LlamaForCausalLM\": a list of transformers class names was expected"},
        BadConfig{"rope_type_not_text",
                  "rope_scaling",
                  {{"rope_type", 5}, {"factor", 4.0}},
                  "config.json rope_scaling: \"rope_type\" is not a string"},
        BadConfig{"eos_past_the_vocabulary", "eos_token_id", 128256,
                  "eos_token_id = 128256: a token id is a whole number below vocab_size 128256"},
        BadConfig{"eos_as_text", "eos_token_id", "</s>", "eos_token_id = \"</s>\": a token id is a whole number"},
        BadConfig{"eos_list_with_text", "eos_token_id", {128001, "x"}, "eos_token_id = \"x\""},
        BadConfig{"eos_empty_list", "eos_token_id", nlohmann::json::array(), "eos_token_id = []: give an id"},
        BadConfig{"bos_negative", "bos_token_id", -1, "bos_token_id = -1: a token id is a whole number"},
        BadConfig{"pad_past_the_vocabulary", "pad_token_id", 999999, "pad_token_id = 999999: a token id"},
        BadConfig{"tied_embeddings", "tie_word_embeddings", true, "tie_word_embeddings = true"},
        BadConfig{"another_activation", "hidden_act", "gelu", "hidden_act = \"gelu\""},
        BadConfig{"biases", "attention_bias", true, "attention_bias = true"},
        BadConfig{"mlp_biases", "mlp_bias", true, "mlp_bias = true"},
        BadConfig{"yarn_scaling",
                  "rope_scaling",
                  {{"rope_type", "yarn"}, {"factor", 4.0}},
                  "rope_scaling of type yarn is not supported"},
        BadConfig{"kv_heads_not_dividing", "num_key_value_heads", 5, "num_key_value_heads 5 must divide"},
        BadConfig{"head_dim_mismatch", "head_dim", 64, "head_dim = 64"},
        BadConfig{"negative_width", "hidden_size", -4096, "hidden_size = -4096: it must be a positive integer"},
        BadConfig{"missing_layers", "num_hidden_layers", nullptr, "has no num_hidden_layers"},
        BadConfig{"dropout", "attention_dropout", 0.1, "attention_dropout = 0.1"},
        BadConfig{"width_past_what_axonn_supports", "hidden_size", std::int64_t{1} << 62,
                  "hidden_size = 4611686018427387904: axonn supports at most 1073741824"},
        BadConfig{"rope_scaling_missing_a_field",
                  "rope_scaling",
                  {{"rope_type", "llama3"}, {"factor", 8.0}},
                  "config.json rope_scaling has no low_freq_factor"},
        BadConfig{"rope_scaling_original_context_not_an_integer",
                  "rope_scaling",
                  {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                   {"original_max_position_embeddings", 32.5}},
                  "original_max_position_embeddings = 32.5: it must be a whole number of positions"},
        BadConfig{"rope_scaling_unknown_field",
                  "rope_scaling",
                  {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                   {"original_max_position_embeddings", 8192}, {"beta_fast", 32}},
                  "has a field beta_fast that axonn does not know"},
        BadConfig{"rope_scaling_two_types",
                  "rope_scaling",
                  {{"rope_type", "llama3"}, {"type", "linear"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                   {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}},
                  "says type \"linear\" and rope_type llama3: keep one"}),
    [](auto const& info) { return info.param.name; });

// The special tokens' ids go back out as they came in: an import exported again dropped Llama 3.1 Instruct's list
// of end tokens (transformers' generation stops at them). Absent ids stay absent.
TEST(HfLlamaConfig, TokenIdsAreWrittenBackAsRead) {
    nlohmann::json config = llama31_8b();
    config["eos_token_id"] = {128001, 128008, 128009};
    config["pad_token_id"] = 128004;
    nlohmann::json written = hf_llama_config_json(parse_hf_llama_config(config.dump(), "config.json"), "bfloat16");
    EXPECT_EQ(written["bos_token_id"], 128000);
    EXPECT_EQ(written["pad_token_id"], 128004);
    EXPECT_EQ(written["eos_token_id"], nlohmann::json({128001, 128008, 128009}));
    config["eos_token_id"] = {128009};  // a list of one stays a list
    written = hf_llama_config_json(parse_hf_llama_config(config.dump(), "config.json"), "bfloat16");
    EXPECT_EQ(written["eos_token_id"], nlohmann::json({128009}));
    written = hf_llama_config_json(parse_hf_llama_config(llama31_8b().dump(), "config.json"), "bfloat16");
    EXPECT_EQ(written["eos_token_id"], 128001);
    config.erase("eos_token_id");
    config.erase("pad_token_id");
    config["bos_token_id"] = nullptr;
    written = hf_llama_config_json(parse_hf_llama_config(config.dump(), "config.json"), "bfloat16");
    EXPECT_FALSE(written.contains("bos_token_id")) << written.dump();
    EXPECT_FALSE(written.contains("eos_token_id")) << written.dump();
    EXPECT_FALSE(written.contains("pad_token_id")) << written.dump();
}

TEST(HfLlamaConfig, NotJsonIsRefused) {
    EXPECT_NE(testing::error_of([] { parse_hf_llama_config("{oops", "config.json"); })
                  .find("config.json: not valid JSON near byte 2: fix it, or fetch the model's config.json"),
              std::string::npos);
    EXPECT_NE(testing::error_of([] { parse_hf_llama_config(std::string(100, '['), "config.json"); })
                  .find("config.json: the JSON nests deeper than 16 levels: fix it"),
              std::string::npos);
}

}  // namespace
}  // namespace axonn
