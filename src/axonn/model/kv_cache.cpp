#include "axonn/model/kv_cache.h"

#include "axonn/core/error.h"

namespace axonn {
namespace {

// One layer's keys (or values) on one rank: B rows × NH/G_y heads × capacity positions × hs.
std::int64_t layer_numel(GptConfig const& config, GridShape const& grid, int batch, int capacity) {
    return static_cast<std::int64_t>(batch) * (config.n_head / grid.y) * capacity * (config.n_embd / config.n_head);
}

}  // namespace

KvCache::KvCache(GptConfig const& config, GridShape const& grid, int batch, int capacity)
    : batch_(batch), capacity_(capacity), layer_numel_(layer_numel(config, grid, batch, capacity)) {
    invariant(batch > 0 && capacity > 0 && capacity <= config.max_seq,
              "a cache of {} rows of {} positions for a context of {}", batch, capacity, config.max_seq);
    keys_ = Tensor({config.n_layer * layer_numel_}, DType::f32);
    values_ = Tensor({config.n_layer * layer_numel_}, DType::f32);
}

void KvCache::advance(int tokens) {
    invariant(tokens >= 0 && length_ + tokens <= capacity_, "{} tokens past position {} of a cache of {}", tokens,
              length_, capacity_);
    length_ += tokens;
}

}  // namespace axonn
