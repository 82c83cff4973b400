#include "axonn/train/host_state.h"

namespace axonn {
HostState HostState::read(Decoder& model, AdamW* optimizer) {
    HostState state;
    VocabSplit const split = model.architecture().vocab_split;
    if (model.in_host_memory()) {
        state.view_ = {model.param_values(), {}, {}, split};
        if (optimizer != nullptr) {
            state.view_ = {state.view_.params, optimizer->exp_avg(), optimizer->exp_avg_sq(), split};
        }
        return state;
    }
    auto const total = static_cast<std::size_t>(model.layout().total());
    state.params_.resize(total);
    model.copy_parameters_to_host(state.params_);
    if (optimizer != nullptr) {
        state.exp_avg_.resize(total);
        state.exp_avg_sq_.resize(total);
        optimizer->copy_moments_to_host(state.exp_avg_, state.exp_avg_sq_);
    }
    state.view_ = {state.params_, state.exp_avg_, state.exp_avg_sq_, split};
    return state;
}

void HostState::write(Decoder& model, AdamW* optimizer, std::function<void(LocalBuffers const&)> const& fill) {
    if (model.in_host_memory()) {
        fill({model.params(), optimizer ? optimizer->exp_avg() : std::span<float>(),
              optimizer ? optimizer->exp_avg_sq() : std::span<float>()});
        return;
    }
    auto const total = static_cast<std::size_t>(model.layout().total());
    std::vector<float> params(total), exp_avg(optimizer ? total : 0), exp_avg_sq(exp_avg.size());
    fill({params, exp_avg, exp_avg_sq});
    model.copy_parameters_from_host(params);
    if (optimizer != nullptr) optimizer->copy_moments_from_host(exp_avg, exp_avg_sq);
}

}  // namespace axonn
