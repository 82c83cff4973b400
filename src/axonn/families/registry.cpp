#include "axonn/families/registry.h"

#include "axonn/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

// The families axonn knows, one line each, in the order --help lists them. AXONN_FAMILY(name) registers
// `ModelFamily const& name_family()`, which families/name/name_family.cpp defines.
#define AXONN_FAMILIES(AXONN_FAMILY) \
    AXONN_FAMILY(gpt2)               \
    AXONN_FAMILY(llama)

namespace axonn {

#define AXONN_DECLARE_FAMILY(name) ModelFamily const& name##_family();
AXONN_FAMILIES(AXONN_DECLARE_FAMILY)
#undef AXONN_DECLARE_FAMILY

namespace {

// "a, b and c" (one name alone as it is).
std::string listed(std::vector<std::string> const& names, std::string_view last_separator) {
    if (names.size() < 2) return names.empty() ? std::string() : names.front();
    std::vector<std::string> const first(names.begin(), names.end() - 1);
    return fmt::format("{}{}{}", fmt::join(first, ", "), last_separator, names.back());
}

template <typename Describe> std::string each_family(Describe describe, std::string_view last_separator) {
    std::vector<std::string> described;
    for (ModelFamily const* family : model_families()) described.push_back(describe(*family));
    return listed(described, last_separator);
}

}  // namespace

std::span<ModelFamily const* const> model_families() {
#define AXONN_LIST_FAMILY(name) &name##_family(),
    static ModelFamily const* const families[] = {AXONN_FAMILIES(AXONN_LIST_FAMILY)};
#undef AXONN_LIST_FAMILY
    return families;
}

ModelFamily const& model_family(std::string_view name) {
    for (ModelFamily const* family : model_families()) {
        if (family->name == name) return *family;
    }
    // Names come from a stored model (index.json's "family"); those a command takes are presets.
    fail("model: unknown family '{}' (axonn knows {})", name, family_names());
}

ModelFamily const& family_of(ModelConfig const& model) { return model_family(model.family()); }

ModelConfig model_preset(std::string const& name) {
    std::vector<std::string> all;
    for (ModelFamily const* family : model_families()) {
        std::vector<std::string> const names = family->preset_names();
        if (std::find(names.begin(), names.end(), name) != names.end()) return family->preset(name);
        all.insert(all.end(), names.begin(), names.end());
    }
    fail("unknown model preset '{}': choose one of {}", name, fmt::join(all, ", "));
}

std::string family_names() {
    return each_family([](ModelFamily const& family) { return std::string(family.name); }, " and ");
}

std::string hf_model_types() {
    return each_family(
        [](ModelFamily const& family) { return fmt::format("{} ({})", family.label, family.hf_model_type); }, " and ");
}

std::string family_labels() {
    return each_family([](ModelFamily const& family) { return std::string(family.label); }, " or ");
}

}  // namespace axonn
