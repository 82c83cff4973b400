#include "axonn/kernels/cpu/column_blocks.h"

#include <algorithm>

namespace axonn::cpu {
namespace {

// Copies each block of each row between the row-major whole[rows, parts·block] and blocks[parts, rows, block]:
// into the blocks when `split`, back into the whole otherwise.
template <typename T>
void move_column_blocks(T* out, T const* in, std::int64_t rows, int parts, int block, bool split) {
    for (int p = 0; p < parts; ++p) {
        for (std::int64_t r = 0; r < rows; ++r) {
            std::int64_t const whole = (r * parts + p) * block, blocked = (p * rows + r) * block;
            T const* from = in + (split ? whole : blocked);
            std::copy(from, from + block, out + (split ? blocked : whole));
        }
    }
}

}  // namespace

template <typename T> void split_columns(T* out, T const* in, std::int64_t rows, int parts, int block) {
    move_column_blocks(out, in, rows, parts, block, true);
}

template <typename T> void join_columns(T* out, T const* in, std::int64_t rows, int parts, int block) {
    move_column_blocks(out, in, rows, parts, block, false);
}

template void split_columns<float>(float*, float const*, std::int64_t, int, int);
template void join_columns<float>(float*, float const*, std::int64_t, int, int);

}  // namespace axonn::cpu
