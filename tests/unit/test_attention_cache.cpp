// Attention over a cache of keys and values (generation, Backend::attention_cached; also grouped-query, with fewer
// key/value heads in the cache than query heads) against the plain attention of the whole sequence (tests/support/reference_attention.h, double): the sequence is fed in chunks, the first
// (an empty cache: the fused kernel) and then the rest one or several tokens at a time over the cache, and every
// position's output must equal the reference's. fp32 kernels on inputs rounded to fp32: within 1e-5 relative
// (norm-wise, as the fused kernel's test).
#include "axonn/kernels/backend.h"

#include "axonn/core/rng.h"
#include "support/reference_attention.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace axonn {
namespace {

struct CacheCase {
    int B, T, C, NH, NKV;
    std::vector<int> chunks;  // tokens per call, in order; they sum to T
    int capacity;             // ≥ T
};

std::string case_name(::testing::TestParamInfo<CacheCase> const& info) {
    CacheCase const& c = info.param;
    return fmt::format("B{}_T{}_NH{}_NKV{}_cap{}_chunks_{}", c.B, c.T, c.NH, c.NKV, c.capacity,
                       fmt::join(c.chunks, "_"));
}

class AttentionCache : public ::testing::TestWithParam<CacheCase> {};

TEST_P(AttentionCache, ChunkedOverTheCacheEqualsWholeSequence) {
    CacheCase const& c = GetParam();
    std::size_t const tokens = static_cast<std::size_t>(c.B) * c.T;
    int const W = c.C + 2 * c.NKV * (c.C / c.NH);  // a token's [q | k | v]
    std::vector<double> qkv(tokens * W);
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>(2.0 * standard_normal({11, 1}, i));
    testing::ReferenceAttention reference{c.B, c.T, c.C, c.NH, c.NKV, {}};
    std::vector<double> expected(tokens * c.C);
    reference.forward(expected.data(), qkv.data());

    auto const backend = make_backend("cpu", DType::f32);
    std::size_t const cache_numel = static_cast<std::size_t>(c.B) * c.capacity * c.NKV * (c.C / c.NH);
    std::vector<float> k_cache(cache_numel), v_cache(cache_numel);
    std::vector<double> actual(expected.size());
    int past = 0;
    for (int n : c.chunks) {
        // This chunk's rows of every sequence: qkv[B,n,W], out[B,n,C], lse[B,NH,n].
        std::vector<float> chunk_qkv(static_cast<std::size_t>(c.B) * n * W), out(static_cast<std::size_t>(c.B) * n * c.C);
        std::vector<float> lse(static_cast<std::size_t>(c.B) * c.NH * n);
        for (int b = 0; b < c.B; ++b) {
            for (int i = 0; i < n; ++i) {
                for (int e = 0; e < W; ++e) {
                    chunk_qkv[(static_cast<std::size_t>(b) * n + i) * W + e] =
                        static_cast<float>(qkv[(static_cast<std::size_t>(b) * c.T + past + i) * W + e]);
                }
            }
        }
        backend->attention_cached(out.data(), lse.data(), k_cache.data(), v_cache.data(), chunk_qkv.data(), c.B, n,
                                  past, c.capacity, c.C, c.NH, c.NKV);
        for (int b = 0; b < c.B; ++b) {
            for (int i = 0; i < n; ++i) {
                for (int e = 0; e < c.C; ++e) {
                    actual[(static_cast<std::size_t>(b) * c.T + past + i) * c.C + e] =
                        out[(static_cast<std::size_t>(b) * n + i) * c.C + e];
                }
            }
        }
        past += n;
    }
    ASSERT_EQ(past, c.T);
    double difference = 0, norm = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        difference += (actual[i] - expected[i]) * (actual[i] - expected[i]);
        norm += expected[i] * expected[i];
    }
    EXPECT_LT(std::sqrt(difference / norm), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Chunks, AttentionCache,
    ::testing::Values(CacheCase{1, 1, 8, 2, 2, {1}, 1},                   // one token, a full cache
                      CacheCase{2, 9, 12, 3, 3, {1, 1, 1, 1, 1, 1, 1, 1, 1}, 9},  // token by token from the start
                      CacheCase{2, 20, 24, 3, 3, {7, 1, 1, 1, 10}, 32},   // a prompt, three tokens, then a chunk
                      CacheCase{1, 150, 16, 2, 2, {100, 50}, 160},        // the prompt spans the fused kernel's tiles
                      CacheCase{3, 12, 8, 1, 1, {5, 7}, 12},              // one head, a full cache after the chunk
                      CacheCase{2, 20, 32, 4, 2, {7, 1, 1, 1, 10}, 24},   // grouped-query: 2 query heads per kv head
                      CacheCase{1, 9, 16, 4, 1, {3, 1, 5}, 9}),           // and 4, a full cache
    case_name);

}  // namespace
}  // namespace axonn
