#include "axonn/kernels/cuda/gpu_choice.h"

#include "axonn/core/error.h"
#include "axonn/core/launcher.h"

#include <cuda_runtime.h>

#include <optional>

namespace axonn::cuda {

bool device_present() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

int local_device() {
    int count = 0;
    cudaError_t const status = cudaGetDeviceCount(&count);
    AXONN_REQUIRE(status == cudaSuccess && count > 0,
                  "no CUDA GPU is visible ({}): run on a GPU node, or check CUDA_VISIBLE_DEVICES",
                  status == cudaSuccess ? "none found" : cudaGetErrorString(status));
    std::optional<LauncherLocalRank> const local = launcher_local_rank();
    return local ? local->rank % count : 0;
}

}  // namespace axonn::cuda
