#include "axonn/kernels/cuda/gpu_choice.h"

#include "axonn/core/error.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

namespace axonn::cuda {
namespace {

// The node-local rank that the launcher exported (OpenMPI, Slurm, MPICH/Intel MPI), else 0.
int launcher_local_rank() {
    for (char const* variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
        if (char const* value = std::getenv(variable)) {
            try {
                return std::stoi(value);
            } catch (std::exception const&) {
                fail("{}='{}' is not a rank: unset it or launch with mpirun or srun", variable, value);
            }
        }
    }
    return 0;
}

}  // namespace

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
    return launcher_local_rank() % count;
}

}  // namespace axonn::cuda
