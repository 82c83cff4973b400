#include "axonn/families/gpt2/gpt2_config.h"

#include "axonn/core/error.h"

#include <fmt/ranges.h>

#include <array>

namespace axonn {
namespace {

struct Preset {
    char const* name;
    int n_layer, n_head, n_embd, max_seq;
};

// GPT-2's published shapes, plus small ones: gpt2-micro splits on every grid of up to 8 ranks (8 heads, width
// 64) for `axonn parity` and the MPI tests; gpt2-tiny for unit tests; gpt2-mini for the demo.
// The gpt-* shapes are AxoNN's scaling benchmarks (Singh et al., SC'24, the weak-scaling table): GPT-2's vocabulary, sequences of 2,048.
constexpr std::array<Preset, 19> gpt2_presets = {{
    {"gpt2-micro", 2, 8, 64, 64},
    {"gpt2-tiny", 2, 4, 128, 256},
    {"gpt2-mini", 4, 4, 256, 256},
    {"gpt2-small", 12, 12, 768, 1024},
    {"gpt2-medium", 24, 16, 1024, 1024},
    {"gpt2-large", 36, 20, 1280, 1024},
    {"gpt2-xl", 48, 25, 1600, 1024},
    {"gpt-5b", 24, 32, 4096, 2048},
    {"gpt-10b", 32, 40, 5120, 2048},
    {"gpt-20b", 32, 56, 7168, 2048},
    {"gpt-40b", 38, 72, 9216, 2048},
    {"gpt-50b", 48, 72, 9216, 2048},
    {"gpt-60b", 56, 72, 9216, 2048},
    {"gpt-80b", 42, 96, 12288, 2048},
    {"gpt-100b", 53, 96, 12288, 2048},
    {"gpt-160b", 84, 96, 12288, 2048},
    {"gpt-175b", 96, 96, 12288, 2048},
    {"gpt-320b", 96, 128, 16384, 2048},
    {"gpt-640b", 192, 128, 16384, 2048},
}};

}  // namespace

std::int64_t GptConfig::parameter_count() const {
    std::int64_t const C = n_embd;
    std::int64_t const per_layer = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (4 * C * C + 4 * C) +
                                   (4 * C * C + C);
    return static_cast<std::int64_t>(vocab_size) * C + static_cast<std::int64_t>(max_seq) * C + n_layer * per_layer +
           2 * C;
}

// Far past any model trained (GPT-3 175B: 96 layers, width 12,288; Llama 3.1 405B: 126 layers, width 16,384),
// and small enough that every size computed from them fits 64 bits.
constexpr int max_layers = 4096;
constexpr int max_width = 1 << 17;
constexpr int max_context = 1 << 17;  // Llama 3.1's 131,072
constexpr int max_vocabulary = 1 << 22;

// Each size is named by its option and its field in index.json: the value may come from either.
void GptConfig::validate() const {
    AXONN_REQUIRE(vocab_size > 0 && vocab_size <= max_vocabulary, "vocabulary size must lie in 1..{}, got {}",
                  max_vocabulary, vocab_size);
    AXONN_REQUIRE(n_layer > 0 && n_layer <= max_layers, "--n-layer (n_layer) must lie in 1..{}, got {}", max_layers,
                  n_layer);
    AXONN_REQUIRE(n_head > 0, "the model needs at least one attention head, got {}", n_head);
    AXONN_REQUIRE(n_embd > 0 && n_embd <= max_width, "--n-embd (n_embd, the model's width) must lie in 1..{}, got {}",
                  max_width, n_embd);
    AXONN_REQUIRE(n_embd % n_head == 0, "{} heads do not divide the width {}: choose a head count that divides it",
                  n_head, n_embd);
    AXONN_REQUIRE(max_seq > 0 && max_seq <= max_context, "--context (max_seq) must lie in 1..{}, got {}", max_context,
                  max_seq);
}

GptConfig gpt_preset(std::string const& name) {
    for (auto const& preset : gpt2_presets) {
        if (name == preset.name) {
            GptConfig config;
            config.name = preset.name;
            config.n_layer = preset.n_layer;
            config.n_head = preset.n_head;
            config.n_embd = preset.n_embd;
            config.max_seq = preset.max_seq;
            return config;
        }
    }
    fail("unknown model preset '{}': choose one of {}", name, fmt::join(gpt_preset_names(), ", "));
}

std::vector<std::string> gpt_preset_names() {
    std::vector<std::string> names;
    for (auto const& preset : gpt2_presets) names.emplace_back(preset.name);
    return names;
}

}  // namespace axonn
