// The table of GPT-2's parameter tensors: the single place where their names, shapes, initialisation and
// weight-decay class are defined (llm.c's lesson: derive every other table, including the test's, from this).
// Per-layer tensors are stacked with a leading L. How each is split over the process grid, and where it sits in
// the flat parameter buffer, is parallel/shard_layout.h's concern.
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/model/gpt_config.h"

#include <array>
#include <cstdint>
#include <string>

namespace axonn {

enum class Param : int {
    wte,       // [Vp, C]   token embedding, tied to the LM head; padding rows stay zero
    wpe,       // [maxT, C] position embedding
    ln1w,      // [L, C]
    ln1b,      // [L, C]
    qkvw,      // [L, 3C, C]
    qkvb,      // [L, 3C]
    attprojw,  // [L, C, C]
    attprojb,  // [L, C]
    ln2w,      // [L, C]
    ln2b,      // [L, C]
    fcw,       // [L, 4C, C]
    fcb,       // [L, 4C]
    fcprojw,   // [L, C, 4C]
    fcprojb,   // [L, C]
    lnfw,      // [C]
    lnfb,      // [C]
};
inline constexpr int param_count = 16;

enum class ParamInit { normal, ones, zeros };

struct ParamSpec {
    Param id;
    std::string name;
    Shape shape;
    ParamInit init;
    float init_std;  // for ParamInit::normal
    bool decay;      // AdamW weight decay applies (the 2-D weight matrices)
};

// The 16 tensors of a model with this config, in Param order.
std::array<ParamSpec, param_count> gpt_parameter_specs(GptConfig const& config);

}  // namespace axonn
