#include "axonn/kernels/cpu/bf16.h"

namespace axonn::cpu {
namespace {

template <typename In, typename Out, typename Convert>
void convert_all(Out* out, In const* in, std::int64_t n, Convert&& convert) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = convert(in[i]);
}

}  // namespace

void to_bf16(bfloat16* out, float const* in, std::int64_t n) {
    convert_all(out, in, n, [](float value) { return to_bfloat16(value); });
}

void to_f32(float* out, bfloat16 const* in, std::int64_t n) {
    convert_all(out, in, n, [](bfloat16 value) { return to_float(value); });
}

}  // namespace axonn::cpu
