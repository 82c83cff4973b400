#include "axonn/model/gpt_parameters.h"

#include <cmath>

namespace axonn {

std::array<ParamSpec, param_count> gpt_parameter_specs(GptConfig const& config) {
    std::int64_t const L = config.n_layer, C = config.n_embd, Vp = config.padded_vocab_size(), maxT = config.max_seq;
    constexpr float std = 0.02f;
    // GPT-2 scales the projections that write into the residual stream by 1/sqrt(2·L), one per residual add.
    float const residual_std = std / std::sqrt(2.0f * static_cast<float>(L));
    return {{
        {Param::wte, "wte", {Vp, C}, ParamInit::normal, std, true},
        {Param::wpe, "wpe", {maxT, C}, ParamInit::normal, std, true},
        {Param::ln1w, "ln1w", {L, C}, ParamInit::ones, 0, false},
        {Param::ln1b, "ln1b", {L, C}, ParamInit::zeros, 0, false},
        {Param::qkvw, "qkvw", {L, 3 * C, C}, ParamInit::normal, std, true},
        {Param::qkvb, "qkvb", {L, 3 * C}, ParamInit::zeros, 0, false},
        {Param::attprojw, "attprojw", {L, C, C}, ParamInit::normal, residual_std, true},
        {Param::attprojb, "attprojb", {L, C}, ParamInit::zeros, 0, false},
        {Param::ln2w, "ln2w", {L, C}, ParamInit::ones, 0, false},
        {Param::ln2b, "ln2b", {L, C}, ParamInit::zeros, 0, false},
        {Param::fcw, "fcw", {L, 4 * C, C}, ParamInit::normal, std, true},
        {Param::fcb, "fcb", {L, 4 * C}, ParamInit::zeros, 0, false},
        {Param::fcprojw, "fcprojw", {L, C, 4 * C}, ParamInit::normal, residual_std, true},
        {Param::fcprojb, "fcprojb", {L, C}, ParamInit::zeros, 0, false},
        {Param::lnfw, "lnfw", {C}, ParamInit::ones, 0, false},
        {Param::lnfb, "lnfb", {C}, ParamInit::zeros, 0, false},
    }};
}

}  // namespace axonn
