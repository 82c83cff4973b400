// Rotary position embeddings in place: each thread rotates one pair of channels (i, i + hs/2) of one head of one
// token, its angle (position · inv_freq[i]) and the cosine and sine in double as on the CPU.
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

namespace axonn::cuda {
namespace {

__global__ void rope_kernel(float* x, double const* inv_freq, int T, int heads, int half, std::int64_t stride,
                            int first_position, int direction, std::int64_t pairs) {
    AXONN_GRID_STRIDE(p, pairs) {
        int const i = static_cast<int>(p % half);
        std::int64_t const head_index = p / half;  // (b·T + t)·heads + h
        int const h = static_cast<int>(head_index % heads);
        std::int64_t const bt = head_index / heads;
        int const t = static_cast<int>(bt % T);
        double const angle = static_cast<double>(first_position + t) * inv_freq[i];
        float const c = static_cast<float>(cos(angle)), s = static_cast<float>(direction * sin(angle));
        float* first = x + bt * stride + static_cast<std::int64_t>(h) * 2 * half;
        float const x1 = first[i], x2 = first[i + half];
        first[i] = x1 * c - x2 * s;
        first[i + half] = x2 * c + x1 * s;
    }
}

}  // namespace

void rope_rotate(float* x, double const* inv_freq_device, int B, int T, int heads, int head_size,
                 std::int64_t stride, int first_position, int direction, cudaStream_t stream) {
    int const half = head_size / 2;
    std::int64_t const pairs = static_cast<std::int64_t>(B) * T * heads * half;
    if (pairs == 0) return;
    rope_kernel<<<blocks_for(pairs), threads_per_block, 0, stream>>>(x, inv_freq_device, T, heads, half, stride,
                                                                    first_position, direction, pairs);
    check_launch("rope_rotate");
}

}  // namespace axonn::cuda
