#include "axonn/train/optimizer.h"

#include "axonn/core/error.h"

#include <cmath>

namespace axonn {

void AdamWConfig::validate() const {
    AXONN_REQUIRE(beta1 >= 0 && beta1 < 1, "beta1 must lie in [0, 1), got {}", beta1);
    AXONN_REQUIRE(beta2 >= 0 && beta2 < 1, "beta2 must lie in [0, 1), got {}", beta2);
    AXONN_REQUIRE(eps > 0 && std::isfinite(eps), "eps must be positive and finite, got {}", eps);
    AXONN_REQUIRE(weight_decay >= 0 && std::isfinite(weight_decay),
                  "--weight-decay must be finite and not negative, got {} (0 turns it off; 0.1 is usual)",
                  weight_decay);
    AXONN_REQUIRE(grad_clip >= 0 && std::isfinite(grad_clip),
                  "--grad-clip must be finite and not negative, got {} (0 turns clipping off)", grad_clip);
}

AdamW::AdamW(std::vector<ParamSegment> segments, std::int64_t total, Backend& backend, AdamWConfig const& config)
    : segments_(std::move(segments)), backend_(backend), config_(config), m_({total}, DType::f32, backend.memory()),
      v_({total}, DType::f32, backend.memory()) {
    config_.validate();
}

void AdamW::step(std::span<float> params, std::span<float const> grads, double norm, float learning_rate,
                 bfloat16* params_bf16) {
    ++steps_taken_;
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
    double const coefficient = config_.grad_clip > 0 ? config_.grad_clip / (norm + 1e-6) : 1.0;
    float const grad_scale = static_cast<float>(std::min(1.0, coefficient));
    for (auto const& segment : segments_) {
        AdamWStep const update{learning_rate, config_.beta1, config_.beta2, config_.eps,
                               segment.decay ? config_.weight_decay : 0.0f, grad_scale, steps_taken_};
        std::int64_t const offset = segment.offset;
        backend_.adamw_update(params.data() + offset, grads.data() + offset, m_.data<float>() + offset,
                              v_.data<float>() + offset, segment.numel, update,
                              params_bf16 == nullptr ? nullptr : params_bf16 + offset);
    }
}

void AdamW::copy_moments_to_host(std::span<float> exp_avg, std::span<float> exp_avg_sq) const {
    AXONN_INVARIANT(exp_avg.size() == static_cast<std::size_t>(m_.numel()) && exp_avg_sq.size() == exp_avg.size(),
                    "moments of {} values for {}", exp_avg.size(), m_.numel());
    backend_.copy_to_host(exp_avg.data(), m_.data<float>(), static_cast<std::int64_t>(m_.bytes()));
    backend_.copy_to_host(exp_avg_sq.data(), v_.data<float>(), static_cast<std::int64_t>(v_.bytes()));
}

void AdamW::copy_moments_from_host(std::span<float const> exp_avg, std::span<float const> exp_avg_sq) {
    AXONN_INVARIANT(exp_avg.size() == static_cast<std::size_t>(m_.numel()) && exp_avg_sq.size() == exp_avg.size(),
                    "moments of {} values for {}", exp_avg.size(), m_.numel());
    backend_.copy_from_host(m_.data<float>(), exp_avg.data(), static_cast<std::int64_t>(m_.bytes()));
    backend_.copy_from_host(v_.data<float>(), exp_avg_sq.data(), static_cast<std::int64_t>(v_.bytes()));
}

}  // namespace axonn
