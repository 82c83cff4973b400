#include "axonn/kernels/cpu/encoder.h"

#include "axonn/core/bfloat16.h"

namespace axonn::cpu {

template <typename T, typename W>
void encoder_forward(T* out, std::int32_t const* tokens, W const* wte, T const* wpe, int B, int T_, int C,
                     int vocab_begin, int vocab_rows) {
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T_; ++t) {
            T* out_bt = out + (static_cast<std::int64_t>(b) * T_ + t) * C;
            int const row = tokens[b * T_ + t] - vocab_begin;
            W const* wte_row = row >= 0 && row < vocab_rows ? wte + static_cast<std::int64_t>(row) * C : nullptr;
            T const* wpe_row = wpe ? wpe + static_cast<std::int64_t>(t) * C : nullptr;
            for (int c = 0; c < C; ++c) {
                out_bt[c] = (wte_row ? static_cast<T>(wte_row[c]) : T(0)) + (wpe_row ? wpe_row[c] : T(0));
            }
        }
    }
}

template <typename T>
void encoder_backward(T* dwte, T* dwpe, T const* dout, std::int32_t const* tokens, int B, int T_, int C,
                      int vocab_begin, int vocab_rows) {
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T_; ++t) {
            T const* dout_bt = dout + (static_cast<std::int64_t>(b) * T_ + t) * C;
            int const row = tokens[b * T_ + t] - vocab_begin;
            if (row >= 0 && row < vocab_rows) {
                T* dwte_row = dwte + static_cast<std::int64_t>(row) * C;
                for (int c = 0; c < C; ++c) dwte_row[c] += dout_bt[c];
            }
            if (dwpe) {
                T* dwpe_row = dwpe + static_cast<std::int64_t>(t) * C;
                for (int c = 0; c < C; ++c) dwpe_row[c] += dout_bt[c];
            }
        }
    }
}

template void encoder_forward<float, float>(float*, std::int32_t const*, float const*, float const*, int, int, int,
                                           int, int);
template void encoder_forward<float, bfloat16>(float*, std::int32_t const*, bfloat16 const*, float const*, int, int,
                                              int, int, int);
template void encoder_forward<double, double>(double*, std::int32_t const*, double const*, double const*, int, int,
                                             int, int, int);
template void encoder_backward<float>(float*, float*, float const*, std::int32_t const*, int, int, int, int, int);
template void encoder_backward<double>(double*, double*, double const*, std::int32_t const*, int, int, int, int, int);

}  // namespace axonn::cpu
