#include "axonn/core/cuda/cuda_check.h"

#include "axonn/core/error.h"

namespace axonn::cuda {

void check(cudaError_t status, char const* what) {
    AXONN_REQUIRE(status == cudaSuccess, "CUDA failed to {}: {} ({}); check the GPU with nvidia-smi", what,
                  cudaGetErrorString(status), cudaGetErrorName(status));
}

void check(cublasStatus_t status, char const* what) {
    AXONN_REQUIRE(status == CUBLAS_STATUS_SUCCESS, "cuBLASLt failed to {}: status {}", what, static_cast<int>(status));
}

void check_launch(char const* kernel) {
    cudaError_t const status = cudaGetLastError();
    AXONN_REQUIRE(status == cudaSuccess, "CUDA kernel {} failed to launch: {}", kernel, cudaGetErrorString(status));
}

}  // namespace axonn::cuda
