#include "axonn/kernels/cpu/column_blocks.h"

#include <algorithm>

namespace axonn::cpu {

template <typename T> void split_columns(T* out, T const* in, std::int64_t rows, int parts, int block) {
    for (int p = 0; p < parts; ++p) {
        for (std::int64_t r = 0; r < rows; ++r) {
            T const* from = in + (r * parts + p) * block;
            std::copy(from, from + block, out + (p * rows + r) * block);
        }
    }
}

template <typename T> void join_columns(T* out, T const* in, std::int64_t rows, int parts, int block) {
    for (int p = 0; p < parts; ++p) {
        for (std::int64_t r = 0; r < rows; ++r) {
            T const* from = in + (p * rows + r) * block;
            std::copy(from, from + block, out + (r * parts + p) * block);
        }
    }
}

template void split_columns<float>(float*, float const*, std::int64_t, int, int);
template void split_columns<double>(double*, double const*, std::int64_t, int, int);
template void join_columns<float>(float*, float const*, std::int64_t, int, int);
template void join_columns<double>(double*, double const*, std::int64_t, int, int);

}  // namespace axonn::cpu
