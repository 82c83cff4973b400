// A model as a run names it: a GPT-2 shape (GptConfig) or a Llama config (LlamaConfig). What the trainer,
// checkpoints and generation carry from the command line to the files and back; the decoder itself runs the
// Architecture it gives.
#pragma once

#include "axonn/model/architecture.h"
#include "axonn/model/gpt_config.h"
#include "axonn/model/llama/llama_config.h"

#include <cstdint>
#include <string>
#include <variant>

namespace axonn {

class ModelConfig {
public:
    ModelConfig() = default;  // GptConfig's defaults (GPT-2 small's shape)
    ModelConfig(GptConfig gpt) : shape_(std::move(gpt)) {}        // NOLINT: a GPT-2 shape is a model
    ModelConfig(LlamaConfig llama) : shape_(std::move(llama)) {}  // NOLINT: so is a Llama config

    // "gpt2" or "llama".
    std::string family() const { return is_llama() ? "llama" : "gpt2"; }
    bool is_llama() const { return std::holds_alternative<LlamaConfig>(shape_); }
    // The family's own config; nullptr for the other family.
    GptConfig const* gpt() const { return std::get_if<GptConfig>(&shape_); }
    LlamaConfig const* llama() const { return std::get_if<LlamaConfig>(&shape_); }

    std::string const& name() const;
    int vocab_size() const;
    int padded_vocab_size() const;
    int context() const;
    // The tokenizer decides the vocabulary.
    void set_vocab_size(int vocab_size);
    std::int64_t parameter_count() const;
    // Throws axonn::Error naming the first impossible value and how to fix it.
    void validate() const;
    Architecture architecture() const;
    // validate(), then architecture(): what a command builds its decoder from.
    Architecture validated_architecture() const;
    // One line for logs: "llama-tiny (llama): 2 layers, width 64, 8 heads (2 key/value), MLP 176, context 128,
    // vocabulary 256 (padded 256)".
    std::string summary() const;

private:
    std::variant<GptConfig, LlamaConfig> shape_;
};

// The preset of either family by its name (gpt2-small, gpt-20b, llama-tiny, llama3.1-8b, ...); an unknown name is
// an axonn::Error that lists them all.
ModelConfig model_preset(std::string const& name);

// How a stored model differs from the expected one, as "layers 4 (here 2), ..."; empty when they are the same.
std::string model_differences(ModelConfig const& stored, ModelConfig const& expected);

}  // namespace axonn
