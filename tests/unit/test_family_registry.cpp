// The family registry (families/registry.h) and ModelConfig, the one type every command carries a model of any
// family in: each test runs over every registered family, so a family added to registry.cpp is checked with no
// edit here. Every preset is found by its name alone and survives index.json's fields both ways (no difference
// model_differences can see); the shape overrides of --n-layer, --n-head, --n-embd and --context reach the
// decoder's Architecture; the tokenizer's vocabulary replaces the preset's; an unknown family or preset is an error
// that names the known ones; a ModelConfig holding no model refuses to be used.
#include "axonn/core/error.h"
#include "axonn/families/registry.h"
#include "axonn/model/model_config.h"

#include "support/error_of.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace axonn {
namespace {

TEST(FamilyRegistry, NamesAreUniqueAndEachFamilyIsFoundByItsName) {
    std::set<std::string> names, model_types, presets;
    for (ModelFamily const* family : model_families()) {
        EXPECT_TRUE(names.insert(std::string(family->name)).second) << family->name;
        EXPECT_TRUE(model_types.insert(std::string(family->hf_model_type)).second) << family->hf_model_type;
        EXPECT_EQ(&model_family(family->name), family);
        for (std::string const& preset : family->preset_names()) {
            EXPECT_TRUE(presets.insert(preset).second) << preset << " is a preset of two families";
        }
    }
    EXPECT_GE(names.size(), 2u);
    EXPECT_EQ(testing::error_of([] { model_family("mamba"); }),
              "model: unknown family 'mamba' (axonn knows " + family_names() + ")");
}

TEST(FamilyRegistry, EveryPresetIsFoundByNameAndSurvivesTheIndexBothWays) {
    for (ModelFamily const* family : model_families()) {
        for (std::string const& name : family->preset_names()) {
            ModelConfig const preset = model_preset(name);
            ASSERT_EQ(preset.family(), family->name) << name;
            EXPECT_EQ(&family_of(preset), family);
            EXPECT_EQ(preset.name(), name);
            EXPECT_NO_THROW(preset.validate()) << name;
            ModelConfig const read_back = family->from_index_json(family->index_json(preset));
            EXPECT_EQ(read_back.family(), preset.family()) << name;
            EXPECT_EQ(read_back.name(), preset.name());
            EXPECT_EQ(model_differences(read_back, preset), "") << name;
            EXPECT_EQ(read_back.parameter_count(), preset.parameter_count()) << name;
        }
    }
}

TEST(FamilyRegistry, UnknownPresetNamesEveryFamilysPresets) {
    std::string const error = testing::error_of([] { model_preset("gpt7"); });
    EXPECT_NE(error.find("unknown model preset 'gpt7'"), std::string::npos) << error;
    for (ModelFamily const* family : model_families()) {
        for (std::string const& name : family->preset_names()) EXPECT_NE(error.find(name), std::string::npos) << name;
    }
}

TEST(FamilyRegistry, ShapeOverridesReachTheArchitecture) {
    for (ModelFamily const* family : model_families()) {
        ModelConfig const preset = family->preset(family->preset_names().front());
        ModelConfig const changed = preset.with_overrides({.layers = 3, .heads = 2, .width = 32, .context = 48});
        Architecture const a = changed.architecture();
        EXPECT_EQ(a.layers, 3) << family->name;
        EXPECT_EQ(a.heads, 2) << family->name;
        EXPECT_EQ(a.width, 32) << family->name;
        EXPECT_EQ(a.context, 48) << family->name;
        EXPECT_EQ(changed.context(), 48) << family->name;
        // Nothing given, nothing changed, and the preset itself untouched (a ModelConfig is a value).
        EXPECT_EQ(model_differences(preset.with_overrides({}), preset), "") << family->name;
        EXPECT_NE(model_differences(changed, preset), "") << family->name;
        EXPECT_EQ(preset.architecture().layers, family->preset(family->preset_names().front()).architecture().layers);
    }
}

TEST(FamilyRegistry, TheTokenizersVocabularyReplacesThePresets) {
    for (ModelFamily const* family : model_families()) {
        ModelConfig model = family->preset(family->preset_names().front());
        ModelConfig const before = model;
        model.set_vocab_size(1000);
        EXPECT_EQ(model.vocab_size(), 1000) << family->name;
        EXPECT_EQ(model.padded_vocab_size(), 1024) << family->name;
        EXPECT_EQ(model.architecture().padded_vocab, 1024) << family->name;
        EXPECT_NE(before.vocab_size(), 1000) << "copies share nothing they could change";
    }
}

TEST(FamilyRegistry, AModelConfigWithNoModelRefusesToBeUsed) {
    ModelConfig const none;
    EXPECT_NE(testing::error_of([&] { none.validate(); }).find("no model was given"), std::string::npos);
    EXPECT_THROW(none.architecture(), Error);
}

}  // namespace
}  // namespace axonn
