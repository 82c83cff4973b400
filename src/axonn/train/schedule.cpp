#include "axonn/train/schedule.h"

#include "axonn/core/error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace axonn {

float LrSchedule::at(int step) const {
    if (step < warmup_steps) return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
    double const progress = static_cast<double>(step - warmup_steps) / std::max(1, total_steps - warmup_steps);
    double const cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(progress, 1.0)));
    return static_cast<float>(min_lr + (max_lr - min_lr) * cosine);
}

void LrSchedule::validate() const {
    AXONN_REQUIRE(max_lr > 0 && std::isfinite(max_lr), "--lr must be positive and finite, got {}", max_lr);
    AXONN_REQUIRE(min_lr >= 0 && min_lr <= max_lr, "--min-lr {} must lie in [0, --lr = {}]", min_lr, max_lr);
    AXONN_REQUIRE(warmup_steps >= 0, "--warmup must not be negative, got {}", warmup_steps);
    AXONN_REQUIRE(total_steps > 0, "the number of steps must be positive, got {}: pass --steps N with N ≥ 1",
                  total_steps);
}

}  // namespace axonn
