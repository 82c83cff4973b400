#include "axonn/model/kv_cache.h"

#include "axonn/core/error.h"

#include <algorithm>

namespace axonn {
namespace {

// One layer's keys (or values) on one rank: B rows × NKV/G_y heads × capacity positions × hs.
std::int64_t layer_numel(Architecture const& a, GridShape const& grid, int batch, int capacity) {
    return static_cast<std::int64_t>(batch) * std::max(1, a.kv_heads / grid.y) * capacity * a.head_size();
}

}  // namespace

KvCache::KvCache(Architecture const& architecture, GridShape const& grid, int batch, int capacity)
    : batch_(batch), capacity_(capacity), layer_numel_(layer_numel(architecture, grid, batch, capacity)) {
    AXONN_INVARIANT(batch > 0 && capacity > 0 && capacity <= architecture.context,
                    "a cache of {} rows of {} positions for a context of {}", batch, capacity, architecture.context);
    keys_ = Tensor({architecture.layers * layer_numel_}, DType::f32);
    values_ = Tensor({architecture.layers * layer_numel_}, DType::f32);
}

void KvCache::advance(int tokens) {
    AXONN_INVARIANT(tokens >= 0 && length_ + tokens <= capacity_, "{} tokens past position {} of a cache of {}", tokens,
                    length_, capacity_);
    length_ += tokens;
}

}  // namespace axonn
