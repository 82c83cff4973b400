#include "axonn/kernels/cpu/adamw.h"

#include <omp.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace axonn::cpu {

namespace {

template <bool with_copy>
void adamw_loop(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWStep const& step,
                bfloat16* param_bf16) {
    AdamWFactors const factors = adamw_factors(step);
    float const decay_factor = factors.decay_factor, step_size = factors.step_size,
                inverse_sqrt_bc2 = factors.inverse_sqrt_bc2;
    // Locals, not step.*: the arrays are float* and could alias the struct's floats, which would force a
    // reload of every hyperparameter in every iteration.
    float const beta1 = step.beta1, beta2 = step.beta2, eps = step.eps, grad_scale = step.grad_scale;
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
        float const g = grad[i] * grad_scale;
        float const m_i = beta1 * m[i] + (1.0f - beta1) * g;
        float const v_i = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = m_i;
        v[i] = v_i;
        float const p = param[i] * decay_factor - step_size * m_i / (std::sqrt(v_i) * inverse_sqrt_bc2 + eps);
        param[i] = p;
        if constexpr (with_copy) param_bf16[i] = to_bfloat16(p);
    }
}

}  // namespace

void adamw_update(float* param, float const* grad, float* m, float* v, std::int64_t n, AdamWStep const& step,
                  bfloat16* param_bf16) {
    // Two loops, so that the one without a copy carries no branch.
    if (param_bf16 != nullptr) {
        adamw_loop<true>(param, grad, m, v, n, step, param_bf16);
    } else {
        adamw_loop<false>(param, grad, m, v, n, step, nullptr);
    }
}

double sum_of_squares(float const* x, std::int64_t n) {
    // Each thread sums a fixed share and the shares are added in thread order. An OpenMP reduction adds them in
    // the order the threads finish: with 3 threads or more the same gradients gave norms that differed in the
    // last bit from call to call (often where threads outnumber cores), and clipping passed it on to the weights.
    std::vector<double> shares(static_cast<std::size_t>(omp_get_max_threads()), 0.0);
#pragma omp parallel num_threads(static_cast<int>(shares.size()))
    {
        auto const thread = static_cast<std::int64_t>(omp_get_thread_num());
        auto const team = static_cast<std::int64_t>(omp_get_num_threads());
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (std::int64_t i = n * thread / team; i < n * (thread + 1) / team; ++i) {
            sum += static_cast<double>(x[i]) * x[i];
        }
        shares[static_cast<std::size_t>(thread)] = sum;
    }
    return std::accumulate(shares.begin(), shares.end(), 0.0);
}

}  // namespace axonn::cpu
