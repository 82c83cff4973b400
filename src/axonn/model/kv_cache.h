// The keys and values of the tokens a model has already seen, kept for generation: each new token then costs one
// row of attention per head instead of a forward over the whole context (Decoder::forward_cached).
//
// Sharded as the activations are: a rank holds its own rows of the batch and its own key/value heads (NKV/G_y, those
// its attention reads); the X ranks of a Y column hold the same values, as they hold the same attention input.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/core/tensor.h"
#include "axonn/model/architecture.h"

namespace axonn {

class KvCache {
public:
    // Room for `capacity` positions of `batch` rows of every layer; capacity ≤ the model's context.
    KvCache(Architecture const& architecture, GridShape const& grid, int batch, int capacity);

    int batch() const { return batch_; }
    int capacity() const { return capacity_; }
    // Positions held: the next tokens go at positions length() ... (the same for every row).
    int length() const { return length_; }
    // Layer l's [B, NKV/G_y, capacity, hs] keys and values.
    float* keys(int layer) { return keys_.data<float>() + layer * layer_numel_; }
    float* values(int layer) { return values_.data<float>() + layer * layer_numel_; }

    void advance(int tokens);
    void clear() { length_ = 0; }

private:
    int batch_;
    int capacity_;
    int length_ = 0;
    std::int64_t layer_numel_;
    Tensor keys_;
    Tensor values_;
};

}  // namespace axonn
