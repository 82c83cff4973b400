#include "axonn/kernels/cpu/attention_cache.h"

#include "axonn/kernels/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace axonn::cpu {
namespace {

// Where key/value head h of row b starts in a [B,NKV,capacity,hs] cache.
std::int64_t cache_offset(int b, int h, int capacity, int NKV, int hs) {
    return ((static_cast<std::int64_t>(b) * NKV + h) * capacity) * hs;
}

}  // namespace

void kv_cache_append(float* k_cache, float* v_cache, float const* qkv, int B, int n, int past, int capacity, int C,
                     int NH, int NKV) {
    int const hs = C / NH;
    std::int64_t const width = C + 2 * static_cast<std::int64_t>(NKV) * hs;  // a token's [q | k | v]
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NKV; ++h) {
            std::int64_t const head = cache_offset(b, h, capacity, NKV, hs);
            for (int i = 0; i < n; ++i) {
                std::int64_t const token = static_cast<std::int64_t>(b) * n + i;
                float const* key = qkv + token * width + C + static_cast<std::int64_t>(h) * hs;
                std::int64_t const position = head + static_cast<std::int64_t>(past + i) * hs;
                std::copy_n(key, hs, k_cache + position);
                std::copy_n(key + static_cast<std::int64_t>(NKV) * hs, hs, v_cache + position);
            }
        }
    }
}

void attention_over_cache(float* out, float const* qkv, float const* k_cache, float const* v_cache, int B, int n,
                          int past, int capacity, int C, int NH, int NKV) {
    int const hs = C / NH, group = NH / NKV;
    std::int64_t const width = C + 2 * static_cast<std::int64_t>(NKV) * hs;
    float const scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel
    {
        std::vector<float> scores(static_cast<std::size_t>(past + n));  // one query's, over the visible positions
#pragma omp for collapse(3)
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                for (int i = 0; i < n; ++i) {
                    std::int64_t const head = cache_offset(b, h / group, capacity, NKV, hs);
                    std::int64_t const token = static_cast<std::int64_t>(b) * n + i;
                    float const* q = qkv + token * width + static_cast<std::int64_t>(h) * hs;
                    int const visible = past + i + 1;
                    float row_max = -INFINITY;
                    for (int j = 0; j < visible; ++j) {
                        float const* k = k_cache + head + static_cast<std::int64_t>(j) * hs;
                        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                        for (int c = 0; c < hs; ++c) dot += q[c] * k[c];
                        scores[j] = dot * scale;
                        row_max = std::max(row_max, scores[j]);
                    }
                    float sum = 0.0f;
                    for (int j = 0; j < visible; ++j) {
                        scores[j] = exp_approx(scores[j] - row_max);
                        sum += scores[j];
                    }
                    float* o = out + token * C + static_cast<std::int64_t>(h) * hs;
                    std::fill_n(o, hs, 0.0f);
                    for (int j = 0; j < visible; ++j) {
                        float const* v = v_cache + head + static_cast<std::int64_t>(j) * hs;
                        float const weight = scores[j] / sum;
#pragma omp simd
                        for (int c = 0; c < hs; ++c) o[c] += weight * v[c];
                    }
                }
            }
        }
    }
}

}  // namespace axonn::cpu
