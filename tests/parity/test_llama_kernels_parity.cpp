// Llama's kernels against an independent PyTorch oracle written from Hugging Face's modeling_llama
// (tests/reference/llama_reference.py, float64): RMSNorm and its gradients; the rotary embedding of the queries
// and keys (Hugging Face's rotate_half pairing, Llama 3's frequency rescaling with frequencies in all three of its
// bands), continuing from position 5, followed by grouped-query attention (4 query heads sharing 2 key/value
// heads), and the gradient of the whole through the attention's backward and the rotation back; SwiGLU and its
// gradient. Both sides compute in double, so only summation order differs: 1e-12 relative, norm-wise.
#include "axonn/core/rng.h"
#include "axonn/io/tensor_file.h"
#include "axonn/kernels/cpu/attention.h"
#include "axonn/kernels/cpu/rmsnorm.h"
#include "axonn/kernels/cpu/rope.h"
#include "axonn/kernels/cpu/swiglu.h"
#include "axonn/kernels/rope_frequencies.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_llama_kernels_parity {

constexpr int B = 2, T = 9, C = 32, NH = 4, NKV = 2, hs = C / NH, W = C + 2 * NKV * hs, F = 12, first_position = 5;
constexpr double eps = 1e-5, theta = 10000.0;
// With head size 8 the wavelengths are 2π·(1, 10, 100, 1000): against an original context of 64 the first is
// kept, the second interpolated, the last two slowed by the factor.
RopeScaling const scaling{8.0, 1.0, 4.0, 64};

std::vector<double> normal_values(std::size_t n, std::uint64_t stream, double scale = 1.0) {
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = scale * standard_normal({17, stream}, i);
    return values;
}

Tensor tensor_of(std::vector<double> const& values, Shape shape) {
    Tensor tensor(std::move(shape), DType::f64);
    std::copy(values.begin(), values.end(), tensor.data<double>());
    return tensor;
}

double relative_difference(std::vector<double> const& actual, Tensor const& expected) {
    EXPECT_EQ(static_cast<std::int64_t>(actual.size()), expected.numel());
    double difference = 0, norm = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
        double const e = expected.data<double>()[i];
        difference += (actual[i] - e) * (actual[i] - e);
        norm += e * e;
    }
    return std::sqrt(difference / std::max(norm, 1e-300));
}

TEST(LlamaKernelsParity, MatchHuggingFacesDefinitions) {
    std::vector<double> const x = normal_values(B * T * C, 1, 2.0), weight = normal_values(C, 2),
                              dnorm = normal_values(B * T * C, 3), qkv = normal_values(B * T * W, 4, 1.5),
                              datt = normal_values(B * T * C, 5), gateup = normal_values(B * T * 2 * F, 6, 2.0),
                              dmlp = normal_values(B * T * F, 7);
    testing::TempDir dir("llama_parity");
    nlohmann::json const config = {
        {"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}, {"F", F}, {"rms_norm_eps", eps},
        {"rope_theta", theta}, {"first_position", first_position},
        {"rope_scaling", {{"factor", scaling.factor}, {"low_freq_factor", scaling.low_freq_factor},
                          {"high_freq_factor", scaling.high_freq_factor},
                          {"original_max_position_embeddings", scaling.original_max_position}}}};
    std::ofstream(dir.path() / "config.json") << config.dump();
    NamedTensors inputs;
    inputs.emplace("x", tensor_of(x, {B * T, C}));
    inputs.emplace("weight", tensor_of(weight, {C}));
    inputs.emplace("dnorm", tensor_of(dnorm, {B * T, C}));
    inputs.emplace("qkv", tensor_of(qkv, {B, T, W}));
    inputs.emplace("datt", tensor_of(datt, {B, T, C}));
    inputs.emplace("gateup", tensor_of(gateup, {B * T, 2 * F}));
    inputs.emplace("dmlp", tensor_of(dmlp, {B * T, F}));
    write_tensor_file(dir.path() / "inputs.axt", inputs);
    std::string const command = std::string("/usr/bin/python3 ") + AXONN_SOURCE_DIR +
                                "/tests/reference/llama_reference.py --input " + dir.path().string() + " --output " +
                                (dir.path() / "reference.axt").string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command << ": run scripts/test, which installs python3-torch";
    NamedTensors const reference = read_tensor_file(dir.path() / "reference.axt");

    std::vector<double> const inv_freq = rope_inverse_frequencies(hs, theta, scaling);
    EXPECT_LT(relative_difference(inv_freq, reference.at("inv_freq")), 1e-14);

    // RMSNorm, forward and backward.
    std::int64_t const N = B * T;
    std::vector<double> stats(N), norm(N * C), rstd(N), dx(N * C, 0.0), dweight(C, 0.0);
    cpu::rmsnorm_statistics(stats.data(), x.data(), N, C);
    cpu::rmsnorm_forward(norm.data(), rstd.data(), x.data(), weight.data(), stats.data(), N, C, C, eps);
    cpu::rmsnorm_backward_statistics(stats.data(), dnorm.data(), x.data(), weight.data(), rstd.data(), N, C);
    cpu::rmsnorm_backward(dx.data(), dweight.data(), dnorm.data(), x.data(), weight.data(), rstd.data(), stats.data(),
                          N, C, C);
    EXPECT_LT(relative_difference(norm, reference.at("norm")), 1e-12);
    EXPECT_LT(relative_difference(dx, reference.at("grad.x")), 1e-12);
    EXPECT_LT(relative_difference(dweight, reference.at("grad.weight")), 1e-12);

    // Rotary embedding of the queries and keys in place, attention, and back: the backward mirrors the forward.
    std::vector<double> roped = qkv, attention(B * T * C), lse(B * NH * T), dqkv(qkv.size(), 0.0);
    cpu::rope_rotate(roped.data(), inv_freq.data(), B, T, NH, hs, W, first_position, +1);
    cpu::rope_rotate(roped.data() + C, inv_freq.data(), B, T, NKV, hs, W, first_position, +1);
    cpu::attention_forward(attention.data(), lse.data(), roped.data(), B, T, C, NH, NKV);
    cpu::attention_backward(dqkv.data(), datt.data(), roped.data(), attention.data(), lse.data(), B, T, C, NH, NKV);
    cpu::rope_rotate(dqkv.data(), inv_freq.data(), B, T, NH, hs, W, first_position, -1);
    cpu::rope_rotate(dqkv.data() + C, inv_freq.data(), B, T, NKV, hs, W, first_position, -1);
    EXPECT_LT(relative_difference(attention, reference.at("attention")), 1e-12);
    EXPECT_LT(relative_difference(dqkv, reference.at("grad.qkv")), 1e-12);

    // SwiGLU.
    std::vector<double> mlp(N * F), dgateup(gateup.size(), 0.0);
    cpu::swiglu_forward(mlp.data(), gateup.data(), N, F);
    cpu::swiglu_backward(dgateup.data(), gateup.data(), dmlp.data(), N, F);
    EXPECT_LT(relative_difference(mlp, reference.at("mlp")), 1e-12);
    EXPECT_LT(relative_difference(dgateup, reference.at("grad.gateup")), 1e-12);
}

}  // namespace test_llama_kernels_parity
}  // namespace axonn
