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

double best_of_two(std::function<void(GemmVariant, float*)> const& run_into, GemmVariant variant, float* scratch) {
    double best = 0;
    for (int run = 0; run < 2; ++run) {
        auto const start = std::chrono::steady_clock::now();
        run_into(variant, scratch);
        double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = run == 0 ? seconds : std::min(best, seconds);
    }
    return best;
}

}  // namespace

void set_gemm_tuning(bool on) { tuning_on = on; }

std::vector<GemmTuning> gemm_tunings() {
    std::lock_guard const lock(tuning_mutex);
    return tunings;
}

GemmVariant gemm_variant(GemmShape const& shape, std::function<void(GemmVariant, float*)> const& run_into) {
    if (shape.K < 2 * kInnerChunk || !tuning_on) return GemmVariant::whole;
    std::lock_guard const lock(tuning_mutex);
    if (auto const found = chosen_variants.find(shape); found != chosen_variants.end()) return found->second;
    std::vector<float> scratch(static_cast<std::size_t>(shape.M * shape.N));
    run_into(GemmVariant::whole, scratch.data());  // first touch of the scratch, and the library's set-up
    GemmTuning tuning{shape, best_of_two(run_into, GemmVariant::whole, scratch.data()),
                      best_of_two(run_into, GemmVariant::inner_chunks, scratch.data()), GemmVariant::whole};
    tuning.chosen = tuning.chunks_s < 0.97 * tuning.whole_s ? GemmVariant::inner_chunks : GemmVariant::whole;
    tunings.push_back(tuning);
    chosen_variants.emplace(shape, tuning.chosen);
    return tuning.chosen;
}

}  // namespace axonn::cpu
