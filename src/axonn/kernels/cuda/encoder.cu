// The token (and position) embedding and its gradient. The gradient of an embedding row sums every token that
// names it: one thread per channel walks the tokens in order, so repeated tokens add up the same way every run.
#include "axonn/kernels/cuda/kernels.h"
#include "axonn/kernels/cuda/launch.cuh"

namespace axonn::cuda {
namespace {

__device__ float as_float(float x) { return x; }
__device__ float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename W>
__global__ void encoder_forward_kernel(float* out, std::int32_t const* tokens, W const* wte, float const* wpe, int T,
                                       int C, int vocab_begin, int vocab_rows, std::int64_t BTC) {
    AXONN_GRID_STRIDE(i, BTC) {
        std::int64_t const bt = i / C;
        int const c = static_cast<int>(i % C);
        int const t = static_cast<int>(bt % T);
        int const row = tokens[bt] - vocab_begin;
        float const token_part = row >= 0 && row < vocab_rows ? as_float(wte[static_cast<std::int64_t>(row) * C + c]) : 0.0f;
        out[i] = token_part + (wpe ? wpe[static_cast<std::int64_t>(t) * C + c] : 0.0f);
    }
}

__global__ void token_embedding_gradient_kernel(float* dwte, float const* dout, std::int32_t const* tokens,
                                                std::int64_t BT, int C, int vocab_begin, int vocab_rows) {
    AXONN_GRID_STRIDE(c, C) {
        for (std::int64_t bt = 0; bt < BT; ++bt) {
            int const row = tokens[bt] - vocab_begin;
            if (row >= 0 && row < vocab_rows) dwte[static_cast<std::int64_t>(row) * C + c] += dout[bt * C + c];
        }
    }
}

// dwpe[t,c] += Σ_b dout[b,t,c]
__global__ void position_embedding_gradient_kernel(float* dwpe, float const* dout, int B, int T, int C) {
    AXONN_GRID_STRIDE(i, static_cast<std::int64_t>(T) * C) {
        float sum = dwpe[i];
        for (int b = 0; b < B; ++b) sum += dout[static_cast<std::int64_t>(b) * T * C + i];
        dwpe[i] = sum;
    }
}

template <typename W>
void launch_encoder_forward(float* out, std::int32_t const* tokens, W const* wte, float const* wpe, int B, int T,
                            int C, int vocab_begin, int vocab_rows, cudaStream_t stream) {
    std::int64_t const BTC = static_cast<std::int64_t>(B) * T * C;
    encoder_forward_kernel<<<blocks_for(BTC), threads_per_block, 0, stream>>>(out, tokens, wte, wpe, T, C,
                                                                             vocab_begin, vocab_rows, BTC);
    check_launch("encoder_forward");
}

}  // namespace

void encoder_forward(float* out, std::int32_t const* tokens, float const* wte, float const* wpe, int B, int T, int C,
                     int vocab_begin, int vocab_rows, cudaStream_t stream) {
    launch_encoder_forward(out, tokens, wte, wpe, B, T, C, vocab_begin, vocab_rows, stream);
}
void encoder_forward(float* out, std::int32_t const* tokens, __nv_bfloat16 const* wte, float const* wpe, int B,
                     int T, int C, int vocab_begin, int vocab_rows, cudaStream_t stream) {
    launch_encoder_forward(out, tokens, wte, wpe, B, T, C, vocab_begin, vocab_rows, stream);
}
void encoder_backward(float* dwte, float* dwpe, float const* dout, std::int32_t const* tokens, int B, int T, int C,
                      int vocab_begin, int vocab_rows, cudaStream_t stream) {
    token_embedding_gradient_kernel<<<blocks_for(C), threads_per_block, 0, stream>>>(
        dwte, dout, tokens, static_cast<std::int64_t>(B) * T, C, vocab_begin, vocab_rows);
    check_launch("encoder_backward");
    if (dwpe == nullptr) return;
    position_embedding_gradient_kernel<<<blocks_for(static_cast<std::int64_t>(T) * C), threads_per_block, 0, stream>>>(
        dwpe, dout, B, T, C);
    check_launch("encoder_backward (positions)");
}

}  // namespace axonn::cuda
