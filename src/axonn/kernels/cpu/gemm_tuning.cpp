#include "axonn/kernels/cpu/gemm_tuning.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

namespace axonn::cpu {
namespace {

std::atomic<bool> tuning_on{true};
std::mutex tuning_mutex;
std::map<GemmShape, GemmVariant> chosen_variants;
std::vector<GemmTuning> tunings;

double best_of_two(std::function<void(GemmVariant, float*)> const& run_into, GemmVariant variant, float* out) {
    double best = 0;
    for (int run = 0; run < 2; ++run) {
        auto const start = std::chrono::steady_clock::now();
        run_into(variant, out);
        double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = run == 0 ? seconds : std::min(best, seconds);
    }
    return best;
}

// Where a tuning keeps the time of `way`.
double& seconds_of(GemmTuning& tuning, GemmVariant way) {
    if (way == GemmVariant::inner_chunks) return tuning.chunks_s;
    if (way == GemmVariant::padded_b) return tuning.padded_s;
    if (way == GemmVariant::column_halves) return tuning.halves_s;
    return tuning.whole_s;
}

}  // namespace

void set_gemm_tuning(bool on) { tuning_on = on; }

std::vector<GemmTuning> gemm_tunings() {
    std::lock_guard const lock(tuning_mutex);
    return tunings;
}

char const* gemm_variant_name(GemmVariant variant) {
    switch (variant) {
        case GemmVariant::whole: return "whole";
        case GemmVariant::inner_chunks: return "chunked";
        case GemmVariant::padded_b: return "padded";
        case GemmVariant::column_halves: return "halves";
    }
    return "?";
}

std::vector<GemmVariant> gemm_candidates(GemmShape const& shape) {
    std::vector<GemmVariant> ways{GemmVariant::whole};
    if (shape.K >= 2 * kInnerChunk) ways.push_back(GemmVariant::inner_chunks);
    std::int64_t const b_rows = shape.transpose_b ? shape.N : shape.K;
    std::int64_t const b_columns = shape.transpose_b ? shape.K : shape.N;
    bool const padded_fits = b_rows * (b_columns + kPaddedRowFloats) * std::int64_t{sizeof(float)} <= kPaddedMaxBytes;
    bool const timed = shape.M * shape.N * shape.K >= kTimedMinWork;
    if (!shape.bf16 && !shape.transpose_a && timed && padded_fits) ways.push_back(GemmVariant::padded_b);
    if (shape.bf16 && timed && shape.N >= 32) ways.push_back(GemmVariant::column_halves);
    return ways;
}

GemmVariant gemm_variant(GemmShape const& shape, float* overwritten,
                         std::function<void(GemmVariant, float*)> const& run_into) {
    if (!tuning_on) return GemmVariant::whole;
    std::vector<GemmVariant> const ways = gemm_candidates(shape);
    if (ways.size() == 1) return GemmVariant::whole;
    std::lock_guard const lock(tuning_mutex);
    if (auto const found = chosen_variants.find(shape); found != chosen_variants.end()) return found->second;
    std::vector<float> scratch(overwritten == nullptr ? static_cast<std::size_t>(shape.M * shape.N) : 0);
    float* const out = overwritten == nullptr ? scratch.data() : overwritten;
    run_into(GemmVariant::whole, out);  // first touch of a scratch, and the library's set-up
    GemmTuning tuning{shape, 0, 0, 0, 0, GemmVariant::whole};
    double to_beat = 0;
    for (GemmVariant const way : ways) {
        double const seconds = seconds_of(tuning, way) = best_of_two(run_into, way, out);
        if (way == GemmVariant::whole) {
            to_beat = 0.97 * seconds;
        } else if (seconds < to_beat) {
            to_beat = seconds;
            tuning.chosen = way;
        }
    }
    tunings.push_back(tuning);
    chosen_variants.emplace(shape, tuning.chosen);
    return tuning.chosen;
}

}  // namespace axonn::cpu
