#include "axonn/kernels/cuda/gemm_rate.h"

#include "axonn/core/cuda/cuda_check.h"
#include "axonn/core/cuda/event.h"
#include "axonn/kernels/cuda/gemm.h"
#include "axonn/kernels/cuda/kernels.h"

namespace axonn::cuda {

GpuGemmRate measure_gemm_rate(DType precision, std::int64_t n) {
    constexpr int warm_ups = 3, timed = 10;
    bool const bf16 = precision == DType::bf16;
    std::int64_t const elements = n * n;
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create a stream");
    // Random operands: on zeros the tensor cores run measurably faster than on real data.
    Tensor a32({elements}, DType::f32, Memory::device), b32({elements}, DType::f32, Memory::device),
        c({elements}, DType::f32, Memory::device);
    fill_uniform(a32.data<float>(), elements, 1, stream);
    fill_uniform(b32.data<float>(), elements, 2, stream);
    Tensor a16, b16;
    if (bf16) {
        a16 = Tensor({elements}, DType::bf16, Memory::device);
        b16 = Tensor({elements}, DType::bf16, Memory::device);
        to_bf16(static_cast<__nv_bfloat16*>(a16.raw_data()), a32.data<float>(), elements, stream);
        to_bf16(static_cast<__nv_bfloat16*>(b16.raw_data()), b32.data<float>(), elements, stream);
    }
    void const* a = bf16 ? a16.raw_data() : a32.raw_data();
    void const* b = bf16 ? b16.raw_data() : b32.raw_data();
    Gemm gemm;
    auto const product = [&] { gemm.run(false, false, n, n, n, a, n, b, n, 0.0f, c.data<float>(), n, bf16, stream); };
    for (int i = 0; i < warm_ups; ++i) product();
    float const milliseconds = milliseconds_on(stream, [&] {
        for (int i = 0; i < timed; ++i) product();
    });
    cudaStreamDestroy(stream);
    double const flops = 2.0 * static_cast<double>(n) * n * n * timed;
    return {n, flops / (milliseconds * 1e-3)};
}

}  // namespace axonn::cuda
