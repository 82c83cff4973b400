// Causal attention the plain way, kept as the fused kernels' reference: the full [T,T] probabilities of every
// head, softmax row by row, then the backward through them. Same layout as kernels/cpu/attention.h:
// qkv[B,T,W] with [q (C) | k (NKV·hs) | v (NKV·hs)] per token (W = C + 2·NKV·hs; query head h uses key/value head
// h / (NH/NKV)), out[B,T,C], dqkv[B,T,W] (+=). Written for double, with std::exp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace axonn::testing {

struct ReferenceAttention {
    int B, T, C, NH, NKV;
    std::vector<double> probabilities;  // [B,NH,T,T], zero above the diagonal

    double& p(int b, int h, int i, int j) { return probabilities[((static_cast<std::size_t>(b) * NH + h) * T + i) * T + j]; }
    // Where query head h's part (0 q, 1 k, 2 v) of token t sits in a [B,T,W] buffer.
    std::size_t index(int b, int t, int part, int h, int d) const {
        int const hs = C / NH, kv = h / (NH / NKV);
        std::size_t const width = static_cast<std::size_t>(C) + 2 * NKV * hs;
        int const column = part == 0 ? h * hs : C + (part - 1) * NKV * hs + kv * hs;
        return (static_cast<std::size_t>(b) * T + t) * width + column + d;
    }
    double q(double const* qkv, int b, int t, int part, int h, int d) const { return qkv[index(b, t, part, h, d)]; }

    // out[B,T,C]      qkv[B,T,W]
    void forward(double* out, double const* qkv) {
        int const hs = C / NH;
        double const scale = 1.0 / std::sqrt(static_cast<double>(hs));
        probabilities.assign(static_cast<std::size_t>(B) * NH * T * T, 0.0);
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                for (int i = 0; i < T; ++i) {
                    std::vector<double> scores(i + 1);
                    for (int j = 0; j <= i; ++j) {
                        for (int d = 0; d < hs; ++d) scores[j] += q(qkv, b, i, 0, h, d) * q(qkv, b, j, 1, h, d) * scale;
                    }
                    double const maximum = *std::max_element(scores.begin(), scores.end());
                    double sum = 0;
                    for (int j = 0; j <= i; ++j) sum += std::exp(scores[j] - maximum);
                    for (int j = 0; j <= i; ++j) p(b, h, i, j) = std::exp(scores[j] - maximum) / sum;
                    for (int d = 0; d < hs; ++d) {
                        double value = 0;
                        for (int j = 0; j <= i; ++j) value += p(b, h, i, j) * q(qkv, b, j, 2, h, d);
                        out[(static_cast<std::size_t>(b) * T + i) * C + h * hs + d] = value;
                    }
                }
            }
        }
    }

    // dqkv[B,T,W] += ...      dout[B,T,C], qkv[B,T,W]; after forward()
    void backward(double* dqkv, double const* dout, double const* qkv) {
        int const hs = C / NH;
        double const scale = 1.0 / std::sqrt(static_cast<double>(hs));
        auto const grad = [&](int b, int t, int part, int h, int d) -> double& { return dqkv[index(b, t, part, h, d)]; };
        for (int b = 0; b < B; ++b) {
            for (int h = 0; h < NH; ++h) {
                for (int i = 0; i < T; ++i) {
                    double const* dout_row = dout + (static_cast<std::size_t>(b) * T + i) * C + h * hs;
                    std::vector<double> dp(i + 1);
                    double dot = 0;
                    for (int j = 0; j <= i; ++j) {
                        for (int d = 0; d < hs; ++d) {
                            dp[j] += dout_row[d] * q(qkv, b, j, 2, h, d);
                            grad(b, j, 2, h, d) += p(b, h, i, j) * dout_row[d];
                        }
                        dot += p(b, h, i, j) * dp[j];
                    }
                    for (int j = 0; j <= i; ++j) {
                        double const ds = p(b, h, i, j) * (dp[j] - dot) * scale;
                        for (int d = 0; d < hs; ++d) {
                            grad(b, i, 0, h, d) += ds * q(qkv, b, j, 1, h, d);
                            grad(b, j, 1, h, d) += ds * q(qkv, b, i, 0, h, d);
                        }
                    }
                }
            }
        }
    }
};

}  // namespace axonn::testing
