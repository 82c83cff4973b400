// A model as a run names it: one family's own config (GPT-2's GptConfig, Llama's LlamaConfig, each in its folder
// under families/), behind one type that the trainer, checkpoints and generation carry from the command line to the
// files and back without knowing which family it is. The decoder itself runs the Architecture it gives.
#pragma once

#include "axonn/model/architecture.h"

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace axonn {

// The dimensions `--n-layer`, `--n-head`, `--n-embd` and `--context` replace in a preset.
struct ShapeOverrides {
    std::optional<int> layers, heads, width, context;
};

// Which of a family's config fields hold those four dimensions (GPT-2's n_layer, Llama's num_hidden_layers, ...).
template <typename Config> struct ShapeFields {
    int Config::*layers;
    int Config::*heads;
    int Config::*width;
    int Config::*context;
};

// What every family's config provides: its family's name, a name and a vocabulary the tokenizer may change, its
// padded vocabulary, parameter count and checks, and, declared beside it, its shape fields and the Architecture the
// decoder runs.
template <typename T>
concept FamilyConfig = requires(T const& config) {
    { T::family } -> std::convertible_to<std::string_view>;  // first: ModelConfig itself fails here, not in a loop
    { config.name } -> std::convertible_to<std::string>;
    { config.vocab_size } -> std::convertible_to<int>;
    { config.padded_vocab_size() } -> std::same_as<int>;
    { config.parameter_count() } -> std::same_as<std::int64_t>;
    config.validate();
    { shape_fields(config) } -> std::same_as<ShapeFields<T>>;
    { decoder_architecture(config) } -> std::same_as<Architecture>;
} && std::copyable<T>;

class ModelConfig {
public:
    ModelConfig() = default;  // no model yet: assign one before asking anything of it
    template <FamilyConfig Config>
    ModelConfig(Config config) : config_(std::make_shared<Held<Config> const>(std::move(config))) {}  // NOLINT

    // The family's name: "gpt2", "llama".
    std::string family() const { return std::string(held().family()); }
    // The family's own config; nullptr when the model is of another family.
    template <FamilyConfig Config> Config const* as() const {
        auto const* held = dynamic_cast<Held<Config> const*>(config_.get());
        return held ? &held->config : nullptr;
    }

    std::string const& name() const { return held().name(); }
    int vocab_size() const { return held().vocab_size(); }
    int padded_vocab_size() const { return held().padded_vocab_size(); }
    int context() const { return held().context(); }
    // The tokenizer decides the vocabulary.
    void set_vocab_size(int vocab_size) { config_ = held().with_vocab_size(vocab_size); }
    // The model with each given dimension replaced (not yet validated).
    ModelConfig with_overrides(ShapeOverrides const& overrides) const { return held().with_overrides(overrides); }
    std::int64_t parameter_count() const { return held().parameter_count(); }
    // Throws axonn::Error naming the first impossible value and how to fix it.
    void validate() const { held().validate(); }
    Architecture architecture() const { return held().architecture(); }
    // validate(), then architecture(): what a command builds its decoder from.
    Architecture validated_architecture() const;
    // One line for logs: "llama-tiny (llama): 2 layers, width 64, 8 heads (2 key/value), MLP 176, context 128,
    // vocabulary 256 (padded 256)".
    std::string summary() const;

private:
    // The one interface the families' configs are seen through (type erasure: ModelConfig stays a value).
    class AnyConfig {
    public:
        virtual ~AnyConfig() = default;
        virtual std::string_view family() const = 0;
        virtual std::string const& name() const = 0;
        virtual int vocab_size() const = 0;
        virtual int padded_vocab_size() const = 0;
        virtual int context() const = 0;
        virtual std::int64_t parameter_count() const = 0;
        virtual void validate() const = 0;
        virtual Architecture architecture() const = 0;
        virtual std::shared_ptr<AnyConfig const> with_vocab_size(int vocab_size) const = 0;
        virtual ModelConfig with_overrides(ShapeOverrides const& overrides) const = 0;
    };
    template <FamilyConfig Config> class Held final : public AnyConfig {
    public:
        explicit Held(Config held) : config(std::move(held)) {}
        std::string_view family() const override { return Config::family; }
        std::string const& name() const override { return config.name; }
        int vocab_size() const override { return config.vocab_size; }
        int padded_vocab_size() const override { return config.padded_vocab_size(); }
        int context() const override { return config.*shape_fields(config).context; }
        std::int64_t parameter_count() const override { return config.parameter_count(); }
        void validate() const override { config.validate(); }
        Architecture architecture() const override { return decoder_architecture(config); }
        std::shared_ptr<AnyConfig const> with_vocab_size(int vocab_size) const override {
            Config changed = config;
            changed.vocab_size = vocab_size;
            return std::make_shared<Held const>(std::move(changed));
        }
        ModelConfig with_overrides(ShapeOverrides const& overrides) const override {
            Config changed = config;
            ShapeFields<Config> const fields = shape_fields(config);
            for (auto [field, value] : {std::pair{fields.layers, overrides.layers}, {fields.heads, overrides.heads},
                                        {fields.width, overrides.width}, {fields.context, overrides.context}}) {
                if (value) changed.*field = *value;
            }
            return changed;
        }

        Config config;
    };

    AnyConfig const& held() const;

    std::shared_ptr<AnyConfig const> config_;  // immutable, so copies share it
};

// How a stored model differs from the expected one, as "layers 4 (here 2), ..."; empty when they are the same.
std::string model_differences(ModelConfig const& stored, ModelConfig const& expected);

}  // namespace axonn
