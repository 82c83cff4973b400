// A matrix cut into blocks of columns and laid out block after block, and back: the layout a collective over the
// blocks' owners moves (a reduce-scatter sends each rank one contiguous block; an all-gather returns them one after
// another). The vocabulary split over X·Y (parallel/vocab_parallel.h) turns a token's [C/G_x] slices over X into
// its whole hidden state [C] and back this way.
#pragma once

#include <cstdint>

namespace axonn::cpu {

// out[parts, rows, block] = in[rows, parts·block], block p holding columns [p·block, (p+1)·block)
template <typename T> void split_columns(T* out, T const* in, std::int64_t rows, int parts, int block);
// out[rows, parts·block] = in[parts, rows, block]: split_columns's inverse
template <typename T> void join_columns(T* out, T const* in, std::int64_t rows, int parts, int block);

}  // namespace axonn::cpu
